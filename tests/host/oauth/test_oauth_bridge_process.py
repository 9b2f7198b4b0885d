"""The built-in OAuth server in a real `mcp-bridge --transport http` process, driven by the MCP SDK's
own OAuth client: discovery, registration (DCR and CIMD), the owner's consent with the pairing code
read from the process's stderr, tokens, the four tools, refresh, a restart, and `mcp-bridge auth`.

Everything is on 127.0.0.1: the issuer is the bound loopback origin (the default of MCP_AUTH=oauth
without a tunnel); a redirect to ChatGPT's redirect URI is read, never followed.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from bridge_proc import BRIDGE, FOUR_TOOLS, HttpBridge, host_env, http_bridge
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from oauth_support import (
    CHATGPT_REDIRECT,
    DocumentServer,
    MemoryTokens,
    Owner,
    sdk_oauth,
)
from test_oauth_cimd import chatgpt_document

PAIRING = r"pairing code ([A-Z0-9]{4}-[A-Z0-9]{4})"


@dataclass
class Endpoint:
    """What the SDK client helpers need of a served bridge."""

    mcp_url: str


def free_port() -> int:
    """A port to serve on twice (a restart must keep the issuer, hence the port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def owner_reading(running: list[HttpBridge], state_dir: Path) -> Owner:
    """The owner at the terminal: reads the newest pairing code the running bridge printed."""
    def read_code(_client_id: str) -> str:
        return running[-1].wait_for_line(PAIRING).group(1)

    return Owner(state_dir, read_code=read_code)


async def four_tools_and_a_call(url: str, auth: httpx.Auth, user_agent: str = "sdk-test/1.0") -> list[str]:
    http = create_mcp_http_client(headers={"User-Agent": user_agent}, auth=auth)
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]
            listed = await session.call_tool("mcp_list_tools", {})
            assert not listed.is_error, listed
    return tools


def initialize_status(url: str, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    return httpx.post(url, json=body, headers=headers, trust_env=False, timeout=30).status_code


async def test_the_sdk_client_goes_through_the_whole_flow_against_a_real_bridge(dirs: dict[str, str]) -> None:
    port = free_port()
    env = host_env(dirs, MCP_AUTH="oauth")
    running: list[HttpBridge] = []
    owner = owner_reading(running, Path(dirs["MCP_STATE_DIR"]))
    storage = MemoryTokens()
    url = f"http://127.0.0.1:{port}/mcp"
    oauth = sdk_oauth(Endpoint(url), owner, storage)  # type: ignore[arg-type]

    with http_bridge(env, "--port", str(port)) as first:
        running.append(first)
        assert await four_tools_and_a_call(url, oauth) == FOUR_TOOLS
        issued = storage.tokens
        assert issued is not None and issued.refresh_token
        oauth.context.token_expiry_time = time.time() - 1  # by the client's clock it expired: it refreshes
        assert await four_tools_and_a_call(url, oauth) == FOUR_TOOLS
        assert storage.tokens.refresh_token != issued.refresh_token
        assert initialize_status(url, issued.access_token) == 401  # the rotated-away token is dead
    assert "served without credentials: only the OAuth endpoints" in first.stderr
    assert issued.access_token not in first.stderr and storage.tokens.access_token not in first.stderr

    with http_bridge(env, "--port", str(port)) as second:  # a restart: the state dir keeps the token
        running.append(second)
        assert await four_tools_and_a_call(url, oauth) == FOUR_TOOLS
        assert owner.authorizations == 1
        listed = subprocess.run([BRIDGE, "auth", "clients"], env=env, capture_output=True, text=True, timeout=60)
        client_id = storage.client_info.client_id
        assert client_id in listed.stdout and "SDK test client" in listed.stdout
        revoked = subprocess.run([BRIDGE, "auth", "revoke", client_id], env=env, capture_output=True, text=True, timeout=60)
        assert revoked.returncode == 0, revoked.stderr
        assert initialize_status(url, storage.tokens.access_token) == 401  # cut off at once, no restart


def test_a_pending_request_shows_its_code_in_the_cli_as_in_the_log(dirs: dict[str, str]) -> None:
    env = host_env(dirs, MCP_AUTH="oauth")
    with http_bridge(env) as running:
        base = running.url.removesuffix("/mcp")
        registered = httpx.post(f"{base}/register", json={
            "client_name": "Raw", "redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none",
        }, trust_env=False, timeout=30).json()
        query = {"response_type": "code", "client_id": registered["client_id"], "redirect_uri": "http://127.0.0.1:9/cb",
                 "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256",
                 "state": "s", "resource": running.url}
        assert httpx.get(f"{base}/authorize", params=query, trust_env=False, timeout=30).status_code == 302
        logged = running.wait_for_line(r"request ([a-z]+-[a-z]+): client 'Raw' .* " + PAIRING)
        pending = subprocess.run([BRIDGE, "auth", "pending"], env=env, capture_output=True, text=True, timeout=60)
    assert pending.stdout.startswith(f"{logged.group(1)}  {logged.group(2)}  'Raw' ")


def test_a_real_bridge_refuses_a_huge_registration_and_keeps_a_normal_one(dirs: dict[str, str]) -> None:
    with http_bridge(host_env(dirs, MCP_AUTH="oauth")) as running:
        base = running.url.removesuffix("/mcp")
        body = {"redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none"}
        huge = httpx.post(f"{base}/register", json={**body, "client_name": "x" * (4 << 20)}, trust_env=False, timeout=30)
        normal = httpx.post(f"{base}/register", json={**body, "client_name": "Raw"}, trust_env=False, timeout=30)
    assert huge.status_code == 413
    assert normal.status_code == 201


async def test_a_chatgpt_like_client_connects_by_cimd_with_its_user_agent_and_redirect_uri(
    dirs: dict[str, str], cimd_host: DocumentServer, loopback_tls: tuple[Path, Path, Path]
) -> None:
    document_url = cimd_host.origin + "/oauth/chatgpt.json"
    cimd_host.publish("/oauth/chatgpt.json", chatgpt_document(document_url))
    env = host_env(dirs, MCP_AUTH="oauth", MCP_OAUTH_TEST_CIMD_CA=str(loopback_tls[0]))
    running: list[HttpBridge] = []
    storage = MemoryTokens()
    with http_bridge(env) as served:
        running.append(served)
        owner = owner_reading(running, Path(dirs["MCP_STATE_DIR"]))
        oauth = sdk_oauth(Endpoint(served.url), owner, storage, redirect_uri=CHATGPT_REDIRECT,  # type: ignore[arg-type]
                          client_metadata_url=document_url)
        tools = await four_tools_and_a_call(served.url, oauth, user_agent="openai-mcp/1.0.0")
        clients = subprocess.run([BRIDGE, "auth", "clients"], env=env, capture_output=True, text=True, timeout=60)
    assert tools == FOUR_TOOLS
    assert storage.client_info.client_id == document_url
    assert "'ChatGPT' [cimd]" in clients.stdout and CHATGPT_REDIRECT in clients.stdout


def test_revoking_a_misspelt_client_says_which_was_meant(dirs: dict[str, str]) -> None:
    env = host_env(dirs, MCP_AUTH="oauth")
    with http_bridge(env) as running:
        registered = httpx.post(f"{running.url.removesuffix('/mcp')}/register", json={
            "client_name": "ChatGPT", "redirect_uris": ["http://127.0.0.1:9/cb"], "token_endpoint_auth_method": "none",
        }, trust_env=False, timeout=30)
        assert registered.status_code == 201
        misspelt = subprocess.run([BRIDGE, "auth", "revoke", "ChatGTP"], env=env, capture_output=True, text=True, timeout=60)
        revoked = subprocess.run([BRIDGE, "auth", "revoke", "ChatGPT"], env=env, capture_output=True, text=True, timeout=60)
    assert misspelt.returncode != 0 and "did you mean 'ChatGPT'?" in misspelt.stderr
    assert revoked.returncode == 0, revoked.stderr  # the twin: the right name revokes it
