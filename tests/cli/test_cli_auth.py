"""Remote servers that sign in with OAuth, end to end against a real OAuth-protected MCP server on
127.0.0.1: 401 -> auth_required -> `mcp-bridge auth login` (the test plays the browser) -> calls work
-> the access token expires and is refreshed without the user -> the refresh is revoked ->
auth_required again; two bridges share one sign-in; the token is kept in the token store only."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from cli_support import BRIDGE, CliDirs, RunCli
from helpers import start_http_fixture

from bridge.settings import Settings
from bridge.tools import Bridge, Reply


@pytest.fixture
def oauth_server() -> Iterator[str]:
    """The server's base URL; its access tokens live 2 s, so every new request refreshes first."""
    with start_http_fixture("oauth_protected.py", env={"TOKEN_TTL_S": "2"}) as (base, _):
        yield base


@pytest.fixture
def bridges(cli_dirs: CliDirs) -> Iterator[list[Bridge]]:
    made: list[Bridge] = []
    yield made
    for bridge in made:
        bridge.close()


def new_bridge(made: list[Bridge]) -> Bridge:
    """A bridge as a host runs it (the model is the caller), over the CLI's state dir."""
    bridge = Bridge(Settings(session_idle_s=0), {})
    made.append(bridge)
    return bridge


def call(bridge: Bridge, tool: str = "whoami", arguments: dict[str, Any] | None = None) -> Reply:
    return bridge.call_tool("remote", tool, json.dumps(arguments or {}))


def sign_in(cli_dirs: CliDirs) -> subprocess.CompletedProcess[str]:
    """`mcp-bridge auth login remote`, with the test as the user's browser."""
    proc = subprocess.Popen([BRIDGE, "auth", "login", "remote", "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    url = None
    for line in proc.stderr:
        found = re.search(r"^\s+(http://127\.0\.0\.1:\d+/authorize\?\S+)$", line)
        if found:
            url = found.group(1)
            break
    assert url is not None, proc.communicate(timeout=60)
    approved = httpx.get(url, follow_redirects=False, timeout=30)  # the in-memory server approves at once
    assert approved.status_code == 302, approved.text
    assert approved.headers["location"].startswith("http://127.0.0.1:")
    httpx.get(approved.headers["location"], timeout=30)  # the browser lands on the bridge's loopback callback
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stored(cli_dirs: CliDirs) -> dict[str, Any]:
    """The one sign-in kept for `remote` (the file keeps one per URL)."""
    (kept,) = json.loads((cli_dirs.state / "oauth" / "servers" / "remote.json").read_text())["by_url"].values()
    return kept  # type: ignore[no-any-return]


def test_a_server_that_asks_for_oauth_is_auth_required_until_signed_in_then_refreshes_by_itself(
    cli: RunCli, cli_dirs: CliDirs, oauth_server: str, bridges: list[Bridge]
) -> None:
    assert cli("servers", "add", "remote", "--url", f"{oauth_server}/mcp").code == 0
    bridge = new_bridge(bridges)
    before = call(bridge)
    assert before.data.code == "auth_required", before.text  # type: ignore[attr-defined]
    assert "mcp-bridge auth login remote" in before.text and not before.data.retryable  # type: ignore[attr-defined]

    signed = sign_in(cli_dirs)
    assert signed.returncode == 0, signed.stderr
    assert "signed in to remote" in signed.stdout
    first = stored(cli_dirs)["tokens"]

    after = call(bridge)
    assert not after.is_error, after.text
    client_id = stored(cli_dirs)["client"]["client_id"]
    assert after.text.strip().endswith(client_id)  # the call carried the bridge's own token
    refreshed = stored(cli_dirs)["tokens"]
    assert refreshed["access_token"] != first["access_token"]  # expired, so refreshed without the user
    assert refreshed["refresh_token"] != first["refresh_token"]  # and the server rotated the refresh token

    revoked = httpx.post(
        f"{oauth_server}/revoke", data={"token": refreshed["refresh_token"], "client_id": client_id, "client_secret": ""}, timeout=30
    )
    assert revoked.status_code == 200
    again = call(bridge)
    assert again.data.code == "auth_required", again.text  # type: ignore[attr-defined]


def test_two_bridges_share_one_sign_in_and_never_spend_a_rotated_refresh_token(
    cli: RunCli, cli_dirs: CliDirs, oauth_server: str, bridges: list[Bridge]
) -> None:
    cli("servers", "add", "remote", "--url", f"{oauth_server}/mcp")
    assert sign_in(cli_dirs).returncode == 0
    one, two = new_bridge(bridges), new_bridge(bridges)
    for _ in range(3):  # each call refreshes; the other bridge must read the new tokens, not reuse its old ones
        for bridge in (one, two):
            reply = call(bridge, "echo", {"text": "hi"})
            assert reply.text == "hi", reply.text


def test_the_tokens_are_kept_in_the_token_store_only(
    cli: RunCli, cli_dirs: CliDirs, oauth_server: str, bridges: list[Bridge]
) -> None:
    cli("servers", "add", "remote", "--url", f"{oauth_server}/mcp")
    assert sign_in(cli_dirs).returncode == 0
    listed = cli("servers", "show", "remote", "--json")
    assert not call(new_bridge(bridges)).is_error
    tokens = stored(cli_dirs)["tokens"]
    secrets = [tokens["access_token"], tokens["refresh_token"]]
    store = cli_dirs.state / "oauth" / "servers" / "remote.json"
    assert (store.stat().st_mode & 0o777) == 0o600
    for path in cli_dirs.base.rglob("*"):
        if path.is_file() and path != store:
            data = path.read_bytes()
            assert not any(secret.encode() in data for secret in secrets), path
    assert not any(secret in listed.out for secret in secrets)


def test_logout_forgets_the_sign_in_and_so_does_removing_the_server(
    cli: RunCli, cli_dirs: CliDirs, oauth_server: str, bridges: list[Bridge]
) -> None:
    cli("servers", "add", "remote", "--url", f"{oauth_server}/mcp")
    assert sign_in(cli_dirs).returncode == 0
    assert cli("auth", "logout", "remote").out == "signed out of remote\n"
    assert call(new_bridge(bridges)).data.code == "auth_required"  # type: ignore[attr-defined]
    assert sign_in(cli_dirs).returncode == 0
    assert cli("servers", "remove", "remote").code == 0
    assert not (cli_dirs.state / "oauth" / "servers" / "remote.json").exists()


def test_a_sign_in_is_bound_to_the_url_it_was_made_for(
    cli: RunCli, cli_dirs: CliDirs, oauth_server: str, bridges: list[Bridge]
) -> None:
    cli("servers", "add", "remote", "--url", f"{oauth_server}/mcp")
    assert sign_in(cli_dirs).returncode == 0
    token = stored(cli_dirs)["tokens"]["access_token"]
    with start_http_fixture("headers_echo.py") as (other, _):  # the same name now points elsewhere
        assert cli("servers", "add", "remote", "--url", f"{other}/mcp").code == 0
        reply = call(new_bridge(bridges), "seen_headers")
    assert not reply.is_error, reply.text
    assert "authorization" not in reply.text.lower() and token not in reply.text


def test_a_stdio_server_has_no_sign_in(cli: RunCli) -> None:
    cli("servers", "add", "local", "--", sys.executable, "-c", "pass")
    ran = cli("auth", "login", "local", "--no-browser")
    assert ran.code == 2 and "only HTTP servers sign in with OAuth" in ran.err


def test_a_token_the_server_rejects_early_is_refreshed_on_the_401(
    cli: RunCli, cli_dirs: CliDirs, oauth_server: str, bridges: list[Bridge]
) -> None:
    cli("servers", "add", "remote", "--url", f"{oauth_server}/mcp")
    assert sign_in(cli_dirs).returncode == 0
    store = cli_dirs.state / "oauth" / "servers" / "remote.json"
    kept = stored(cli_dirs)
    kept["expires_at"] = kept["expires_at"] + 3600  # the bridge believes the token good for an hour
    store.write_text(json.dumps({"by_url": {kept["url"]: kept}}))
    rejected = kept["tokens"]["access_token"]
    probe = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for _ in range(200):  # wait until the server itself has let the token expire (it lives 2 s)
        answer = httpx.post(f"{oauth_server}/mcp", json=probe, headers={"Authorization": f"Bearer {rejected}"}, timeout=30)
        if answer.status_code == 401:
            break
        httpx.get(f"{oauth_server}/.well-known/oauth-authorization-server", timeout=30)  # a beat of real work, not a sleep
    assert answer.status_code == 401
    reply = call(new_bridge(bridges), "echo", {"text": "hi"})
    assert reply.text == "hi", reply.text
    assert stored(cli_dirs)["tokens"]["access_token"] != rejected


def play_browser(url: str) -> None:
    """Open the sign-in URL as the user's browser would: the server approves, the browser lands on
    the bridge's loopback callback."""
    approved = httpx.get(url, follow_redirects=False, timeout=30)
    assert approved.status_code == 302, approved.text
    httpx.get(approved.headers["location"], timeout=30)


def test_a_serving_bridge_gives_the_model_the_sign_in_url_and_signs_in_in_the_background(
    cli: RunCli, cli_dirs: CliDirs, oauth_server: str, bridges: list[Bridge]
) -> None:
    cli("servers", "add", "remote", "--url", f"{oauth_server}/mcp")
    bridge = new_bridge(bridges)
    first = call(bridge)
    assert first.data.code == "auth_required", first.text  # type: ignore[attr-defined]
    url = first.data.detail["url"]  # type: ignore[attr-defined]
    assert url.startswith(f"{oauth_server}/authorize?") and url in first.text
    assert call(bridge).data.detail["url"] == url  # type: ignore[attr-defined]  # one sign-in under way, not two
    play_browser(url)
    for _ in range(100):  # the background flow stores the tokens once the browser is back
        after = call(bridge, "echo", {"text": "signed"})
        if not after.is_error:
            break
    assert after.text == "signed", after.text
    assert stored(cli_dirs)["tokens"]["access_token"]


async def test_a_host_that_opens_urls_is_asked_to_and_the_call_goes_on_once_signed_in(
    cli: RunCli, cli_dirs: CliDirs, oauth_server: str, bridges: list[Bridge]
) -> None:
    import anyio.to_thread
    import mcp_types as mt
    from mcp import Client

    from bridge import internals
    from bridge.host.app import build_app

    cli("servers", "add", "remote", "--url", f"{oauth_server}/mcp")
    bridge = new_bridge(bridges)
    asked: list[mt.ElicitRequestURLParams] = []

    async def on_elicit(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        assert isinstance(params, mt.ElicitRequestURLParams)
        asked.append(params)
        await anyio.to_thread.run_sync(play_browser, params.url)
        return mt.ElicitResult(action="accept")

    async with Client(internals.lowlevel_server(build_app(bridge)), mode="legacy", elicitation_callback=on_elicit) as host:
        result = await host.call_tool(
            "mcp_call_tool", {"server": "remote", "tool_name": "echo", "arguments_json": '{"text": "via host"}'}
        )
    assert [params.message for params in asked] == ["Sign in to remote for the bridge"]
    assert not result.is_error, result.content
    assert result.content[0].text == "via host"  # type: ignore[union-attr]
