"""The canary for `bridge.internals`: every private part of FastMCP and the SDK the bridge reaches
is still there and still behaves as the bridge relies on. A failure here after an upgrade names the
reach that moved; fix `bridge/internals.py`, nowhere else. (Importing `bridge.internals` is itself
the check that the private names still exist.)"""

from __future__ import annotations

import inspect
import warnings
from typing import Self

import anyio
import httpx2
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.server.context import reset_transport, set_transport
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import SessionMessage

from bridge import internals
from bridge.models import HttpServerSpec
from bridge.tools.oauth import oauth_client_metadata


def test_the_lifespan_is_an_async_context_manager_that_enters_and_exits() -> None:
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
    for name in ("current_tokens", "client_info", "token_expiry_time", "oauth_metadata", "auth_server_url", "client_metadata"):
        assert hasattr(context, name), name
    assert callable(context.is_token_valid) and callable(context.can_refresh_token)
    assert context.get_authorization_base_url(spec.url) == "http://127.0.0.1:9"
    assert provider._initialized is False
    # StoredOAuth widens the SDK's authorization step (step-up scope, the secret's method).
    assert inspect.iscoroutinefunction(OAuthClientProvider._perform_authorization)


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


def test_close_http_session_ends_a_session_as_the_manager_does() -> None:
    from starlette.testclient import TestClient

    app = FastMCP("canary").http_app(path="/mcp")
    headers = {"Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    with TestClient(app) as client:
        session = client.post("/mcp", json=initialize, headers=headers).headers["mcp-session-id"]
        in_session = {**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
        assert client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=in_session).status_code == 200
        assert client.portal.call(internals.close_http_session, app, session) is True
        assert session not in internals.live_http_sessions(app)
        assert client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=in_session).status_code == 404
        assert client.portal.call(internals.close_http_session, app, session) is False  # already gone


def test_fastmcp_names_the_env_file_it_read_and_bridge_pointed_it_at_devnull() -> None:
    import os

    assert internals.fastmcp_env_file() == os.devnull


def _capabilities_seen(client_factory: object) -> dict[str, object]:
    """What a server is told by a client `client_factory(server)` makes, in both eras."""

    app = FastMCP("canary")

    @app.tool
    def told(ctx: Context) -> dict[str, object]:
        capabilities = ctx.session.client_capabilities or mcp_types.ClientCapabilities()
        return capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)

    seen: dict[str, object] = {}

    async def ask() -> None:
        for mode in ("legacy", "auto"):
            client = Client(internals.lowlevel_server(app), mode=mode, elicitation_callback=client_factory)  # type: ignore[arg-type]
            internals.advertise_exactly(client, mcp_types.ClientCapabilities(roots=mcp_types.RootsCapability()))
            async with client:
                seen[mode] = (await client.call_tool("told", {})).structured_content

    anyio.run(ask)
    return seen


def test_a_client_advertises_exactly_what_it_is_told_in_both_eras() -> None:
    async def elicit(context: object, params: object) -> mcp_types.ElicitResult:
        return mcp_types.ElicitResult(action="decline")

    # The elicitation callback alone would advertise form and URL mode; the override wins.
    assert _capabilities_seen(elicit) == {"legacy": {"roots": {}}, "auto": {"roots": {}}}


def test_the_host_log_level_is_what_logging_set_level_set() -> None:
    app = FastMCP("canary")

    @app.tool
    def level(ctx: Context) -> str:
        return str(internals.host_log_level(ctx.session))

    async def ask() -> list[str]:
        async with Client(internals.lowlevel_server(app), mode="legacy") as client:
            before = (await client.call_tool("level", {})).content[0].text  # type: ignore[union-attr]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.set_logging_level("warning")
            after = (await client.call_tool("level", {})).content[0].text  # type: ignore[union-attr]
        return [before, after]

    assert anyio.run(ask) == ["None", "warning"]


def test_the_caller_scope_is_the_session_in_the_handshake_era_and_the_process_on_stdio() -> None:

    app = FastMCP("canary")

    @app.tool
    def caller(ctx: Context) -> str:
        return internals.caller_scope(ctx)

    async def ask(mode: str) -> list[str]:
        seen = []
        for _ in range(2):
            async with Client(internals.lowlevel_server(app), mode=mode) as client:
                seen.append((await client.call_tool("caller", {})).content[0].text)  # type: ignore[union-attr]
        return seen

    token = set_transport("stdio")
    try:
        handshake = anyio.run(ask, "legacy")
        modern = anyio.run(ask, "auto")
    finally:
        reset_transport(token)
    assert handshake[0] != handshake[1]  # one scope per handshake-era session
    assert modern == ["process", "process"]


def test_an_unchecked_request_returns_the_raw_result_in_both_eras() -> None:
    app = FastMCP("canary")

    @app.tool
    def ping() -> str:
        return "pong"

    async def ask(mode: str) -> dict[str, object]:
        async with Client(internals.lowlevel_server(app), mode=mode) as client:
            return await internals.send_unchecked(client.session, mcp_types.ListToolsRequest())

    for mode in ("legacy", "auto"):
        raw = anyio.run(ask, mode)
        assert [tool["name"] for tool in raw["tools"]] == ["ping"]  # type: ignore[index, union-attr]


class _Duplex:
    """A serving loop's read and write stream in one object, as the stdio face's segment is."""

    def __init__(self) -> None:
        self.to_server, self._inbox = anyio.create_memory_object_stream[SessionMessage | Exception](8)
        self._outbox, self.from_server = anyio.create_memory_object_stream[SessionMessage](8)

    async def receive(self) -> SessionMessage | Exception:
        return await self._inbox.receive()

    def __aiter__(self) -> _Duplex:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        return await self._inbox.__anext__()

    async def send(self, message: SessionMessage) -> None:
        await self._outbox.send(message)

    async def aclose(self) -> None:
        await self._inbox.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def test_serve_era_serves_the_era_it_is_told_on_one_duplex_stream() -> None:
    """The handshake era answers `initialize`; the 2026-07-28 era refuses it, as the SDK's own
    dual-era loop would after reading the first request itself."""

    async def initialize(modern: bool) -> mcp_types.JSONRPCMessage:
        app = FastMCP("canary")
        duplex = _Duplex()
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        request = mcp_types.JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize", params=params)
        async with internals.lifespan(app), anyio.create_task_group() as tg:
            server = internals.lowlevel_server(app)
            tg.start_soon(internals.serve_era, server, duplex, modern, internals.initialization_options(app))
            await duplex.to_server.send(SessionMessage(request))
            answer = await duplex.from_server.receive()
            duplex.to_server.close()  # end of input ends the loop
        return answer.message

    legacy = anyio.run(initialize, False)
    assert isinstance(legacy, mcp_types.JSONRPCResponse) and legacy.result["serverInfo"]["name"] == "canary"
    modern = anyio.run(initialize, True)
    assert isinstance(modern, mcp_types.JSONRPCError) and modern.error.code == mcp_types.UNSUPPORTED_PROTOCOL_VERSION


def test_opens_modern_is_the_sdks_rule_for_a_first_request() -> None:
    envelope = {"_meta": {mcp_types.PROTOCOL_VERSION_META_KEY: "2026-07-28"}}

    def request(method: str, params: dict[str, object] | None) -> mcp_types.JSONRPCRequest:
        return mcp_types.JSONRPCRequest(jsonrpc="2.0", id=1, method=method, params=params)

    assert internals.opens_modern(request("tools/list", envelope))
    assert not internals.opens_modern(request("initialize", envelope))  # the handshake, whatever it carries
    assert not internals.opens_modern(request("tools/list", {"_meta": {"progressToken": 1}}))
    assert not internals.opens_modern(request("tools/list", None))
