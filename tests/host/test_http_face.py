"""The HTTP face as a tunnelled ChatGPT connector meets it, and as an attacker would: exact path,
handshake-era sessions, Host/Origin checks, bearer token and OAuth, and the host's credentials
never reaching a downstream server, a child or the log.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn.config
import uvicorn.importer
from bridge_proc import (
    BRIDGE,
    ROOT,
    HttpBridge,
    HttpPeer,
    host_env,
    http_bridge,
    http_peer,
    post_initialize,
)
from helpers import fixture_path, start_http_fixture
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from bridge.host.http import uvicorn_options

TOKEN = "test-token-" + "7f3a9c2e5b1d4068"


@pytest.fixture
def bridge(dirs: dict[str, str]) -> Iterator[HttpBridge]:
    with http_bridge(host_env(dirs)) as running:
        yield running


# --- path and sessions -----------------------------------------------------------------------


def test_post_to_mcp_answers_without_redirect_and_issues_a_session(bridge: HttpBridge) -> None:
    response = post_initialize(bridge.url)
    assert response.status_code == 200
    assert response.headers["mcp-session-id"]


def test_an_unknown_session_gets_404_and_the_client_can_start_again(bridge: HttpBridge) -> None:
    with http_peer(bridge.url) as peer:
        peer.handshake("2025-06-18", "openai-mcp")
        peer.session_id = "no-such-session"
        stale = peer.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}})
        assert stale.status_code == 404
        peer.session_id = None
        peer.handshake("2025-06-18", "openai-mcp")
        assert len(peer.request("tools/list")["tools"]) == 4


def test_the_get_event_stream_of_a_live_session_is_accepted(bridge: HttpBridge) -> None:
    """ChatGPT opens it after a long idle; a 405 there sends it into a reconnect loop."""
    with http_peer(bridge.url) as peer:
        peer.handshake("2025-06-18", "openai-mcp")
        headers = {"Accept": "text/event-stream", "mcp-session-id": peer.session_id or "", "mcp-protocol-version": "2025-06-18"}
        with peer.client.stream("GET", bridge.url, headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")


# --- Host and Origin (DNS rebinding) ---------------------------------------------------------


def test_a_foreign_host_header_is_refused(bridge: HttpBridge) -> None:
    assert post_initialize(bridge.url, Host="evil.example").status_code == 421


def test_the_access_log_names_refused_requests_and_not_served_ones(bridge: HttpBridge) -> None:
    """An owner watching a tunnelled bridge sees what was turned away; a served request (in the
    audit log already) writes no access line. uvicorn writes a request's line as its answer starts,
    so the served one would be there before the refused one that follows it."""
    assert post_initialize(bridge.url).status_code == 200
    assert post_initialize(bridge.url, Host="evil.example").status_code == 421
    bridge.wait_for_line(r'"POST /mcp HTTP/1.1" 421')
    assert not re.search(r'"POST /mcp HTTP/1.1" 200', bridge.stderr), bridge.stderr


def test_a_loopback_host_header_with_its_port_is_served(bridge: HttpBridge) -> None:
    port = bridge.url.split(":")[2].split("/")[0]
    assert post_initialize(bridge.url, Host=f"localhost:{port}").status_code == 200


def test_a_foreign_origin_is_refused_with_403(bridge: HttpBridge) -> None:
    assert post_initialize(bridge.url, Origin="http://evil.example").status_code == 403


def test_a_same_origin_request_is_served(bridge: HttpBridge) -> None:
    origin = bridge.url.removesuffix("/mcp")
    assert post_initialize(bridge.url, Origin=origin).status_code == 200


def test_a_tunnel_host_named_in_mcp_allowed_hosts_is_served_to_its_token_holder(dirs: dict[str, str]) -> None:
    env = host_env(dirs, MCP_ALLOWED_HOSTS="bridge.example, *.trycloudflare.com", MCP_AUTH_TOKEN=TOKEN)
    bearer = f"Bearer {TOKEN}"
    with http_bridge(env) as running:
        assert post_initialize(running.url, Host="bridge.example", Authorization=bearer).status_code == 200
        assert post_initialize(running.url, Host="quiet-owl.trycloudflare.com", Authorization=bearer).status_code == 200
        assert post_initialize(running.url, Host="evil.example", Authorization=bearer).status_code == 421


def test_an_origin_named_in_mcp_allowed_origins_is_served(dirs: dict[str, str]) -> None:
    with http_bridge(host_env(dirs, MCP_ALLOWED_ORIGINS="https://chatgpt.com")) as running:
        assert post_initialize(running.url, Origin="https://chatgpt.com").status_code == 200
        assert post_initialize(running.url, Origin="https://evil.example").status_code == 403


# --- bearer token ----------------------------------------------------------------------------


@pytest.fixture
def guarded(dirs: dict[str, str]) -> Iterator[HttpBridge]:
    with http_bridge(host_env(dirs, MCP_AUTH_TOKEN=TOKEN)) as running:
        yield running


def test_without_the_token_a_request_gets_401_with_a_bearer_challenge(guarded: HttpBridge) -> None:
    response = post_initialize(guarded.url)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_wrong_token_gets_401(guarded: HttpBridge) -> None:
    assert post_initialize(guarded.url, Authorization=f"Bearer {TOKEN}x").status_code == 401
    assert post_initialize(guarded.url, Authorization=f"Bearer {TOKEN[:-1]}").status_code == 401


def test_the_right_token_lists_and_calls_tools(guarded: HttpBridge) -> None:
    with http_peer(guarded.url, {"Authorization": f"Bearer {TOKEN}"}) as peer:
        peer.handshake("2025-11-25", "openai-mcp")
        assert len(peer.request("tools/list")["tools"]) == 4
        listed = peer.request("tools/call", {"name": "mcp_list_tools", "arguments": {}})
    assert listed["isError"] is False


def test_a_short_token_is_refused_at_start_without_being_echoed(dirs: dict[str, str]) -> None:
    done = subprocess.run(
        [BRIDGE, "--transport", "http", "--port", "0"],
        env=host_env(dirs, MCP_AUTH_TOKEN="hunter2-secret"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "MCP_AUTH_TOKEN" in done.stderr and "16 characters" in done.stderr
    assert "hunter2" not in done.stderr


def test_a_public_bind_is_served_when_a_token_guards_it(dirs: dict[str, str]) -> None:
    with http_bridge(host_env(dirs, MCP_AUTH_TOKEN=TOKEN), "--host", "0.0.0.0") as running:
        url = running.url.replace("0.0.0.0", "127.0.0.1")
        assert post_initialize(url).status_code == 401
        assert post_initialize(url, Authorization=f"Bearer {TOKEN}").status_code == 200
    assert "authentication: bearer token" in running.stderr


# --- the host's credentials stay with the bridge ---------------------------------------------


def call_through(peer: HttpPeer, server: str, tool: str, arguments: dict[str, object]) -> dict[str, object]:
    call = {"server": server, "tool_name": tool, "arguments_json": json.dumps(arguments)}
    return peer.request("tools/call", {"name": "mcp_call_tool", "arguments": call})


def test_the_hosts_token_never_reaches_a_downstream_http_server_or_the_log(dirs: dict[str, str]) -> None:
    env = host_env(dirs, MCP_AUTH_TOKEN=TOKEN, MCP_HTTP_ALLOW_PRIVATE="1")  # the fixture is on loopback
    with start_http_fixture("headers_echo.py") as (base, _), http_bridge(env) as running:
        with http_peer(running.url, {"Authorization": f"Bearer {TOKEN}", "Cookie": f"session={TOKEN}"}) as peer:
            peer.handshake("2025-11-25", "openai-mcp")
            server = {"name": "hdr", "url": f"{base}/mcp", "headers_json": '{"X-Downstream": "granted"}'}
            added = peer.request("tools/call", {"name": "mcp_add_server", "arguments": server})
            assert added["isError"] is False, added
            seen = call_through(peer, "hdr", "seen_headers", {})
        post_initialize(running.url, Authorization=f"Bearer {TOKEN}-wrong")
    assert seen["isError"] is False, seen
    seen_text = json.dumps(seen)
    assert "x-downstream" in seen_text and "granted" in seen_text  # the server's own header does go
    assert TOKEN not in seen_text
    assert TOKEN not in running.stderr


def test_the_hosts_token_never_reaches_a_stdio_child(dirs: dict[str, str]) -> None:
    env = host_env(dirs, MCP_AUTH_TOKEN=TOKEN, MCP_CHILD_ENV_PREFIXES="MCP_", MCP_PASSED_ON="yes")
    with http_bridge(env) as running, http_peer(running.url, {"Authorization": f"Bearer {TOKEN}"}) as peer:
        peer.handshake("2025-11-25", "openai-mcp")
        echo = {"name": "echo", "command": sys.executable, "args_json": json.dumps([fixture_path("echo")])}
        peer.request("tools/call", {"name": "mcp_add_server", "arguments": echo})
        child_env = call_through(peer, "echo", "env", {})
    assert child_env["isError"] is False, child_env
    assert "MCP_PASSED_ON" in json.dumps(child_env)  # the prefix rule works, yet the token is held back
    assert TOKEN not in json.dumps(child_env)


# --- OAuth through a FastMCP provider, as docs/oauth.md documents it ----------------------------


def readme_oauth_launcher() -> str:
    section = (ROOT / "docs" / "oauth.md").read_text().split("### A FastMCP OAuth proxy", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "docs/oauth.md's FastMCP OAuth proxy section has no python launcher"
    return match.group(1)


def test_the_readme_oauth_launcher_serves_discovery_and_client_registration_for_chatgpt(dirs: dict[str, str]) -> None:
    launcher = Path(dirs["MCP_WORKSPACE"]) / "chatgpt_bridge.py"
    launcher.write_text(readme_oauth_launcher())
    env = host_env(
        dirs,
        HOME=dirs["MCP_WORKSPACE"],  # the OAuth proxy keeps its client registry under HOME
        GITHUB_CLIENT_ID="Ov23-test-client",
        GITHUB_CLIENT_SECRET="test-client-secret",
        BRIDGE_PUBLIC_URL="https://bridge.example",
        MCP_AUTH_ALLOWED_USERS="octocat",
    )
    command = [sys.executable, str(launcher), "--transport", "http", "--port", "0"]
    with http_bridge(env, command=command) as running:
        base = running.url.removesuffix("/mcp")
        challenge = post_initialize(running.url)
        resource = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=30).json()
        server = httpx.get(f"{base}/.well-known/oauth-authorization-server", timeout=30).json()
        registered = httpx.post(
            f"{base}/register",
            json={
                "redirect_uris": ["https://chatgpt.com/connector_platform_oauth_redirect"],
                "client_name": "ChatGPT",
                "token_endpoint_auth_method": "none",
            },
            timeout=30,
        )
    assert challenge.status_code == 401
    assert 'resource_metadata="https://bridge.example/.well-known/oauth-protected-resource/mcp"' in challenge.headers["www-authenticate"]
    assert resource["resource"] == "https://bridge.example/mcp"
    assert server["registration_endpoint"] == "https://bridge.example/register"
    assert registered.status_code == 201 and registered.json()["client_id"]
    assert "test-client-secret" not in running.stderr


def test_a_token_and_a_provider_together_are_refused(dirs: dict[str, str]) -> None:
    launcher = Path(dirs["MCP_WORKSPACE"]) / "chatgpt_bridge.py"
    launcher.write_text(readme_oauth_launcher())
    github = {"GITHUB_CLIENT_ID": "x", "GITHUB_CLIENT_SECRET": "y", "BRIDGE_PUBLIC_URL": "https://bridge.example"}
    env = host_env(dirs, HOME=dirs["MCP_WORKSPACE"], MCP_AUTH_TOKEN=TOKEN, **github)
    done = subprocess.run([sys.executable, str(launcher), "--transport", "http"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "choose one" in done.stderr


def test_the_http_face_parses_requests_with_httptools() -> None:
    """uvicorn's C parser, not h11 (pure Python, ~0.4 ms more a warm call): importing the protocol
    uvicorn is told to use fails if httptools is not installed."""
    options = uvicorn_options()
    protocol = uvicorn.importer.import_from_string(uvicorn.config.HTTP_PROTOCOLS[options["http"]])
    assert protocol is HttpToolsProtocol
