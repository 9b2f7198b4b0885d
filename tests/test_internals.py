"""The canary for `bridge.internals`: every private part of FastMCP and the SDK the bridge reaches
is still there and still behaves as the bridge relies on. A failure here after an upgrade names the
reach that moved; fix `bridge/internals.py`, nowhere else. (Importing `bridge.internals` is itself
the check that the private names still exist.)"""

from __future__ import annotations

import inspect

import httpx2
import mcp_types
from fastmcp import FastMCP
from mcp.client.auth import OAuthClientProvider
from mcp.server.lowlevel import Server

from bridge import internals
from bridge.models import HttpServerSpec
from bridge.tools.oauth import oauth_client_metadata


def test_the_lifespan_is_an_async_context_manager_that_enters_and_exits() -> None:
    import anyio

    app = FastMCP("canary")

    async def enter_and_exit() -> None:
        async with internals.lifespan(app):
            pass

    anyio.run(enter_and_exit)


def test_the_lowlevel_server_is_the_sdks_and_serves_streams() -> None:
    server = internals.lowlevel_server(FastMCP("canary"))
    assert isinstance(server, Server)
    assert list(inspect.signature(server.run).parameters)[:3] == ["read_stream", "write_stream", "initialization_options"]


def test_the_initialization_options_advertise_list_changed_as_fastmcps_own_stdio_does() -> None:
    app = FastMCP("canary", version="9.9.9")
    options = internals.initialization_options(app)
    assert options.server_name == "canary" and options.server_version == "9.9.9"
    capabilities = internals.lowlevel_server(app).get_capabilities(
        internals.lowlevel_server(app).notification_options, {}
    )
    assert isinstance(capabilities, mcp_types.ServerCapabilities)
    assert capabilities.tools is not None and capabilities.tools.list_changed is True


def test_the_http_client_factory_takes_headers_and_a_timeout() -> None:
    client = internals.create_mcp_http_client(headers={"X-Canary": "1"}, timeout=httpx2.Timeout(5))
    assert isinstance(client, httpx2.AsyncClient)
    assert client.headers["X-Canary"] == "1"



def test_the_sdk_oauth_client_still_has_the_parts_stored_oauth_drives() -> None:
    assert inspect.isasyncgenfunction(OAuthClientProvider._auth_flow)
    spec = HttpServerSpec(url="http://127.0.0.1:9/mcp")
    provider = internals.StoredOAuth(
        server_url=spec.url, client_metadata=oauth_client_metadata(spec), storage=None  # type: ignore[arg-type]
    )
    context = provider.context
    for name in ("current_tokens", "client_info", "token_expiry_time"):
        assert hasattr(context, name), name
    assert callable(context.is_token_valid) and callable(context.can_refresh_token)
    assert provider._initialized is False


def test_live_http_sessions_sees_a_session_open_and_end() -> None:
    from starlette.testclient import TestClient

    app = FastMCP("canary").http_app(path="/mcp")
    assert internals.live_http_sessions(app) == {}
    headers = {"Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    with TestClient(app) as client:
        session = client.post("/mcp", json=initialize, headers=headers).headers["mcp-session-id"]
        assert session in internals.live_http_sessions(app)
        ended = client.delete("/mcp", headers={**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})
        assert ended.status_code == 200
        assert session not in internals.live_http_sessions(app)


def test_fastmcp_names_the_env_file_it_read_and_bridge_pointed_it_at_devnull() -> None:
    import os

    assert internals.fastmcp_env_file() == os.devnull
