"""Tokens: rotation, reuse, restarts, revocation from another process, and what reaches the disk."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from oauth_support import (
    MemoryTokens,
    Owner,
    RawClient,
    echo_through,
    initialize_with,
    redirect_params,
    sdk_oauth,
)

from bridge.host.oauth import list_clients, list_pending


def test_refresh_rotates_both_tokens(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    first = client.tokens_by_consent(served.state_dir)

    refreshed = client.refresh(first["refresh_token"])

    assert refreshed.status_code == 200, refreshed.text
    second = refreshed.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert initialize_with(served, second["access_token"]).status_code == 200
    assert initialize_with(served, first["access_token"]).status_code == 401


def test_reusing_a_rotated_refresh_token_revokes_its_family(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    first = client.tokens_by_consent(served.state_dir)
    second = client.refresh(first["refresh_token"]).json()

    reused = client.refresh(first["refresh_token"])

    assert reused.status_code == 401 and reused.json()["error"] == "invalid_grant"
    assert client.refresh(second["refresh_token"]).status_code == 401
    assert initialize_with(served, second["access_token"]).status_code == 401


def test_an_authorization_code_works_once(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    tokens = client.tokens_by_consent(served.state_dir)

    again = client.exchange(tokens["_code"])

    assert again.status_code == 401 and again.json()["error"] == "invalid_grant"
    assert initialize_with(served, tokens["access_token"]).status_code == 401  # the family is revoked


def test_pkce_verifier_must_match(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    _page, fields = client.open_consent()
    code = redirect_params(client.submit(fields, list_pending(served.state_dir)[0].pairing_code))["code"]

    wrong = client.token(grant_type="authorization_code", code=code, redirect_uri=client.redirect_uri,
                         code_verifier="x" * 43)
    right = client.exchange(code)

    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_grant"
    assert right.status_code == 200


async def test_tokens_survive_a_restart(serve, owner: Owner) -> None:
    served = serve()
    storage = MemoryTokens()
    await echo_through(served, sdk_oauth(served, owner, storage))

    served.restart()
    tools = await echo_through(served, sdk_oauth(served, owner, storage))

    assert tools == ["echo"]
    assert owner.authorizations == 1  # no second consent


def test_revoking_from_another_process_cuts_the_client_off_at_once(serve) -> None:
    served = serve()
    client = RawClient.registered(served, client_name="to be revoked")
    tokens = client.tokens_by_consent(served.state_dir)
    assert initialize_with(served, tokens["access_token"]).status_code == 200

    revoke = (
        "import sys; from pathlib import Path; from bridge.host.oauth import revoke_client;"
        "print(revoke_client(Path(sys.argv[1]), sys.argv[2]).client_id)"
    )
    done = subprocess.run([sys.executable, "-c", revoke, str(served.state_dir), "to be revoked"],
                          capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == client.client_id
    assert initialize_with(served, tokens["access_token"]).status_code == 401
    assert client.refresh(tokens["refresh_token"]).status_code == 401
    assert list_clients(served.state_dir) == []


def test_state_files_are_0600_and_hold_no_raw_secret(serve, owner: Owner) -> None:
    served = serve()
    client = RawClient.registered(served)
    first = client.tokens_by_consent(served.state_dir)
    second = client.refresh(first["refresh_token"]).json()
    secrets = [first["_code"], first["access_token"], first["refresh_token"], second["access_token"],
               second["refresh_token"]]

    files = [p for p in Path(served.state_dir).rglob("*") if p.is_file()]

    assert files, "nothing was written"
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        text = path.read_text()
        assert not [s for s in secrets if s in text], path
    assert stat.S_IMODE((served.state_dir / "oauth").stat().st_mode) == 0o700
