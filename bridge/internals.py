"""Every reach into FastMCP's and the MCP SDK's private parts, in one place.

These names are not public API, so an upgrade may move them: `tests/test_internals.py` is the
canary that fails loudly when one of them is gone or changed shape. Both faces use this module, so
it sits at the bottom of the package with the settings and the errors.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Container
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any, Protocol

import anyio
import httpx2
import mcp_types
from fastmcp import FastMCP
from fastmcp.server.auth.middleware import RequireAuthMiddleware
from fastmcp.server.context import _get_client_log_level
from fastmcp.server.http import StreamableHTTPASGIApp
from mcp import Client
from mcp.client._transport import TransportStreams
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.utils import union_scopes
from mcp.client.session import ClientSession
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import _has_modern_envelope, _serve_legacy_stream, _serve_modern_stream
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull
from mcp.shared.message import SessionMessage
from starlette.applications import Starlette

__all__ = [
    "advertise_exactly",
    "caller_scope",
    "close_http_session",
    "create_mcp_http_client",
    "fastmcp_env_file",
    "host_log_level",
    "initialization_options",
    "lifespan",
    "live_http_sessions",
    "lowlevel_server",
    "opens_modern",
    "send_unchecked",
    "serve_era",
    "SharedTokenStorage",
    "StoredOAuth",
    "TransportStreams",
]


def lifespan(app: FastMCP) -> AbstractAsyncContextManager[Any]:
    """What `FastMCP.run_stdio_async` enters around serving (which cannot be handed streams)."""
    return app._lifespan_manager()


def lowlevel_server(app: FastMCP) -> Server[Any]:
    """The SDK server FastMCP drives; the stdio face runs one serving loop of it per protocol era."""
    return app._mcp_server


def opens_modern(request: mcp_types.JSONRPCRequest) -> bool:
    """The SDK's rule for a connection's first request: it opens the 2026-07-28 era when it is not
    `initialize` and carries that era's envelope (`serve_era` is then told which era it found)."""
    return request.method != "initialize" and _has_modern_envelope(request.params)


class Duplex(ReadStream[SessionMessage | Exception], WriteStream[SessionMessage], Protocol):
    """One object that is a serving loop's read stream and its write stream."""


async def serve_era(server: Server[Any], streams: Duplex, modern: bool, options: InitializationOptions) -> None:
    """What `Server.run` does, in an era the caller already knows (the stdio face read the first
    request itself): the server's lifespan, then the SDK's serving loop of that era. `Server.run`
    would find the era by reading up to the first request and relaying the rest to the loop through
    a task and a memory stream, one more task switch and two checkpoints on every message."""
    async with server.lifespan(server) as state:
        try:
            if modern:
                await _serve_modern_stream(server, streams, streams, lifespan_state=state, raise_exceptions=False)
            else:
                await _serve_legacy_stream(
                    server, streams, streams, lifespan_state=state, session_id=None, init_options=options, raise_exceptions=False
                )
        finally:
            await streams.aclose()


def initialization_options(app: FastMCP) -> InitializationOptions:
    """The options FastMCP's own stdio serving passes: its notification options (list-changed) included."""
    return app._mcp_server.create_initialization_options()


def _session_manager(app: Starlette) -> StreamableHTTPSessionManager | None:
    for route in app.routes:
        endpoint = getattr(route, "endpoint", None)
        endpoint = endpoint.app if isinstance(endpoint, RequireAuthMiddleware) else endpoint
        if isinstance(endpoint, StreamableHTTPASGIApp) and endpoint.session_manager is not None:
            return endpoint.session_manager
    return None


def live_http_sessions(app: Starlette) -> Container[str]:
    """The ids of the Streamable HTTP sessions FastMCP's session manager holds right now (a live
    view; empty before the app's lifespan has started). The SDK keeps them in `_server_instances`
    and forgets one however it ends: DELETE, idle timeout, crash."""
    manager = _session_manager(app)
    return manager._server_instances if manager is not None else {}


async def close_http_session(app: Starlette, session_id: str) -> bool:
    """End one Streamable HTTP session as the SDK's manager ends a session itself (its
    `_discard_session`, also what follows a DELETE): forgotten at once, so its id answers 404, and
    its transport terminated, which ends its server task. Whether it was open. The manager offers
    no public way to close a session."""
    manager = _session_manager(app)
    transport = manager._server_instances.get(session_id) if manager is not None else None
    if manager is None or transport is None:
        return False
    await manager._discard_session(session_id, transport)
    return True


def fastmcp_env_file() -> str:
    """The `.env` file FastMCP's settings were read from when fastmcp was imported."""
    return sys.modules["fastmcp.settings"].ENV_FILE


class SharedTokenStorage(TokenStorage, Protocol):
    """A `TokenStorage` that several processes share (`bridge.store.tokens.ServerTokens`)."""

    @property
    def expires_at(self) -> float | None: ...

    def refreshing(self) -> AbstractAsyncContextManager[None]: ...


REFRESH_MARGIN_S = 30.0  # refresh this long before the access token expires, not after a 401


class StoredOAuth(OAuthClientProvider):
    """The SDK's OAuth client over storage other bridge processes write too.

    Before each request it reads the shared storage again (another process may have refreshed), takes
    the stored absolute expiry (the SDK keeps none for stored tokens, so it would never refresh them),
    and refreshes under the storage's cross-process lock, reading once more inside it. Reaches into
    `OAuthClientProvider._auth_flow`, `_initialized` and `context` (the canary test watches them).
    """

    def __init__(
        self,
        *,
        server_url: str,
        client_metadata: Any,
        storage: SharedTokenStorage,
        redirect_handler: Callable[[str], Awaitable[None]] | None = None,
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None,
        client: OAuthClientInformationFull | None = None,
        client_metadata_url: str | None = None,
        step_up_scope: str | None = None,
    ) -> None:
        """`client`: the operator's client (its secret is held here, in memory, never stored);
        `step_up_scope`: scopes a sign-in asks for on top of what the server's challenge names."""
        super().__init__(
            server_url=server_url,
            client_metadata=client_metadata,
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=client_metadata_url,
        )
        self._shared = storage
        self._client = client
        self._step_up_scope = step_up_scope
        # One flow at a time, reload included: a reload while another request is mid-refresh would
        # put back the tokens that refresh is replacing (the SDK's own lock covers only its flow).
        self._one_at_a_time = anyio.Lock()

    async def _reload(self) -> None:
        context = self.context
        context.current_tokens = await self._shared.get_tokens()
        context.client_info = self._client or await self._shared.get_client_info()
        expires_at = self._shared.expires_at
        context.token_expiry_time = None if expires_at is None else expires_at - REFRESH_MARGIN_S
        self._initialized = True

    async def _perform_authorization(self) -> httpx2.Request:
        """The SDK's authorization, asking also for the step-up scope (the SDK takes the scope from
        the unsigned request's challenge, which names only what that request needed), and sending
        the operator's secret the way the server's metadata asks when the operator did not say."""
        context = self.context
        if self._step_up_scope:
            context.client_metadata.scope = union_scopes(context.client_metadata.scope, self._step_up_scope)
        client = context.client_info
        if client is not None and client is self._client and client.client_secret and context.oauth_metadata is not None:
            offered = context.oauth_metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
            if client.token_endpoint_auth_method not in offered and "client_secret_post" in offered:
                context.client_info = client.model_copy(update={"token_endpoint_auth_method": "client_secret_post"})
        return await super()._perform_authorization()

    async def _legacy_metadata(self, request: httpx2.Request, response: httpx2.Response) -> httpx2.Response:
        """2025-03-26 servers (no protected-resource metadata) publish authorization server metadata
        at their own origin's well-known path, often naming an issuer below it (`origin/oauth`); the
        SDK requires the origin itself (RFC 8414 §3.3, `validate_metadata_issuer` in
        `mcp/client/auth/oauth2.py`, `_auth_flow`) and refuses them. An issuer on the same origin
        names the same server, so it is read as the origin; any other issuer is still refused."""
        context = self.context
        if context.auth_server_url is not None or request.method != "GET" or response.status_code != 200:
            return response
        origin = context.get_authorization_base_url(context.server_url)
        if str(request.url) != f"{origin}/.well-known/oauth-authorization-server":
            return response
        try:
            metadata = json.loads(await response.aread())
        except ValueError:
            return response
        issuer = metadata.get("issuer") if isinstance(metadata, dict) else None
        if not isinstance(issuer, str) or issuer.rstrip("/") == origin or not issuer.startswith(f"{origin}/"):
            return response
        return httpx2.Response(200, json={**metadata, "issuer": origin}, request=request)

    def _needs_refresh(self) -> bool:
        return not self.context.is_token_valid() and self.context.can_refresh_token()

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The SDK's flow over freshly read storage. A refresh happens under the cross-process lock;
        a 401 to a token believed valid (revoked, or expired early) gets one refresh and a second try
        before the SDK's flow would ask for a sign-in."""
        async with self._one_at_a_time, AsyncExitStack() as held:
            locked = False

            async def lock_and_reload() -> None:
                nonlocal locked
                if not locked:
                    await held.enter_async_context(self._shared.refreshing())
                    locked = True
                await self._reload()  # the lock's last holder may have refreshed already

            await self._reload()
            if self._needs_refresh():
                await lock_and_reload()
            retried = False
            flow = super()._auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = await self._legacy_metadata(outgoing, (yield outgoing))
                    if outgoing is request and response.status_code == 401 and not retried and self.context.can_refresh_token():
                        retried = True
                        await flow.aclose()
                        rejected = self.context.current_tokens
                        await lock_and_reload()
                        if self.context.current_tokens == rejected:  # nobody refreshed it meanwhile: now
                            self.context.token_expiry_time = 1.0  # long past (0 would mean "never expires")
                        flow = super()._auth_flow(request)
                        outgoing = await flow.__anext__()
                        continue
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()


def advertise_exactly(client: Client, capabilities: mcp_types.ClientCapabilities) -> None:
    """Make `client` advertise exactly `capabilities`, in both eras.

    The SDK derives the advertisement from which callbacks are set, and an elicitation callback
    always claims both form and URL mode; the bridge advertises what the calling host has, no more.
    It swaps `ClientSession._build_capabilities` on the session `Client._build_session` makes.
    """
    build = client._build_session

    async def build_session(exit_stack: AsyncExitStack) -> ClientSession:
        session = await build(exit_stack)
        session._build_capabilities = lambda version: capabilities  # type: ignore[method-assign]
        return session

    client._build_session = build_session  # type: ignore[method-assign]


def host_log_level(session: Any) -> mcp_types.LoggingLevel | None:
    """The level a handshake-era host set with `logging/setLevel` (FastMCP keeps it on the connection)."""
    return _get_client_log_level(session)


def caller_scope(ctx: Any) -> str:
    """Who is calling, as FastMCP scopes session data: the handshake-era session, else the
    authenticated principal, else this process on stdio; unauthenticated 2026-07-28 HTTP (served
    only on loopback) has nothing that tells one caller from the next."""
    return ctx._session_scope_key() or "anonymous"



async def send_unchecked(session: ClientSession, request: mcp_types.ClientRequest) -> dict[str, Any]:
    """Send `request` as `ClientSession.send_request` does, returning the raw result unvalidated.

    The SDK checks every `tools/call` answer as a `CallToolResult`; a task-augmented call
    (2025-11-25) answers a `CreateTaskResult`, which the caller validates itself.
    """
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    session._stamp(data, opts)  # type: ignore[arg-type]
    return await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)  # type: ignore[arg-type]
