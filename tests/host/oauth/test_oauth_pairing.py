"""Pairing that cannot be mixed up: the consent page and `mcp-bridge auth pending` name each request
alike ("amber-falcon"), newest first; a client that starts again ends its abandoned request; clients
that never paired are forgotten after a day. Through a real face and the real CLI."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from bridge_proc import BRIDGE
from oauth_support import RawClient, page_request_name, redirect_params, register

from bridge.host.oauth import list_clients, list_pending
from bridge.host.oauth.limits import UNUSED_CLIENT_S
from bridge.host.oauth.store import OAuthStore


def cli(state_dir: Path, *argv: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "MCP_STATE_DIR": str(state_dir)}
    ran = subprocess.run([BRIDGE, "auth", *argv], env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_the_page_and_auth_pending_name_each_request_alike_newest_first(serve) -> None:
    served = serve()
    first, second = (RawClient.registered(served, client_name="ChatGPT") for _ in range(2))
    first_page, first_fields = first.open_consent()
    second_page, second_fields = second.open_consent()

    lines = cli(served.state_dir, "pending").splitlines()
    names = [page_request_name(first_page.text), page_request_name(second_page.text)]
    listed = [re.match(r"([a-z]+-[a-z]+)  ([A-Z0-9]{4}-[A-Z0-9]{4})  'ChatGPT' ", line) for line in lines]

    assert names[0] != names[1]
    assert [m.group(1) for m in listed if m] == [names[1], names[0]]  # newest first
    assert first.client_id in lines[1] and second.client_id in lines[0]
    code_of = {m.group(1): m.group(2) for m in listed if m}
    assert redirect_params(first.submit(first_fields, code_of[names[0]]))["code"]
    assert redirect_params(second.submit(second_fields, code_of[names[1]]))["code"]


def test_a_client_starting_again_ends_its_abandoned_request(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    other = RawClient.registered(served)
    _abandoned, abandoned_fields = client.open_consent()
    _other_page, other_fields = other.open_consent()
    elsewhere = RawClient(served, client.client_id, client.redirect_uri, source="198.51.100.7")
    _elsewhere_page, elsewhere_fields = elsewhere.open_consent()

    _again, again_fields = client.open_consent()
    pending = {p.name: p for p in list_pending(served.state_dir)}

    assert client.submit(abandoned_fields, "AAAA-AAAA").status_code == 404  # ended, not merely waiting
    assert len(pending) == 3  # the newer one, the other client's, the same client's from elsewhere
    assert redirect_params(other.submit(other_fields, pending[page_request_name(_other_page.text)].pairing_code))
    again_code = pending[page_request_name(_again.text)].pairing_code
    assert redirect_params(client.submit(again_fields, again_code))["code"]
    assert elsewhere.submit(elsewhere_fields, "AAAA-AAAA").status_code == 400  # still waiting: a wrong code


def test_clients_that_never_paired_are_forgotten_after_a_day(serve) -> None:
    served = serve()
    paired = RawClient.registered(served, client_name="paired")
    paired.tokens_by_consent(served.state_dir)
    RawClient.registered(served, client_name="abandoned")
    RawClient.registered(served, client_name="recent")
    with OAuthStore(served.state_dir).update() as state:  # a day passes for the first two
        for record in state.clients.values():
            if record.info.client_name in ("paired", "abandoned"):
                record.registered_at = time.time() - UNUSED_CLIENT_S - 1

    listed = cli(served.state_dir, "clients")
    assert register(served).status_code == 201  # any write forgets them from the file too

    assert "'paired'" in listed and "'recent'" in listed and "abandoned" not in listed
    kept = sorted(c.client_name for c in list_clients(served.state_dir))
    assert kept == ["paired", "raw client", "recent"]
    assert "abandoned" not in (served.state_dir / "oauth" / "state.json").read_text()


def test_a_client_name_with_control_characters_cannot_forge_a_line_of_the_cli(serve) -> None:
    served = serve()
    forged = "ChatGPT\n7H4Q-CTYR  'ChatGPT' \x1b[2J\u202e"
    RawClient.registered(served, client_name=forged).open_consent()
    RawClient.registered(served, client_name="plain").open_consent()

    pending = cli(served.state_dir, "pending")
    clients = cli(served.state_dir, "clients")

    assert len(pending.splitlines()) == 2 and len(clients.splitlines()) == 2  # one line per entry, as the twin
    for shown in (pending, clients):
        assert "\x1b" not in shown and "\u202e" not in shown
        assert "'ChatGPT\\n7H4Q-CTYR  \\'ChatGPT\\' \\x1b[2J\\u202e'" in shown
        assert "'plain'" in shown
