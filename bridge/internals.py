"""Every reach into FastMCP's and the MCP SDK's private parts, in one place.

These names are not public API, so an upgrade may move them: `tests/test_internals.py` is the
canary that fails loudly when one of them is gone or changed shape. Both faces use this module, so
it sits at the bottom of the package with the settings and the errors.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.server.context import _get_client_log_level
from mcp import Client
from mcp.client._transport import TransportStreams
from mcp.client.session import ClientSession
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.shared._httpx_utils import create_mcp_http_client

__all__ = [
    "TransportStreams",
    "advertise_exactly",
    "caller_scope",
    "create_mcp_http_client",
    "host_log_level",
    "initialization_options",
    "lifespan",
    "lowlevel_server",
    "send_unchecked",
]


def lifespan(app: FastMCP) -> AbstractAsyncContextManager[Any]:
    """What `FastMCP.run_stdio_async` enters around serving (which cannot be handed streams)."""
    return app._lifespan_manager()


def lowlevel_server(app: FastMCP) -> Server[Any]:
    """The SDK server FastMCP drives; the stdio face runs one serving loop of it per protocol era."""
    return app._mcp_server


def initialization_options(app: FastMCP) -> InitializationOptions:
    """The options FastMCP's own stdio serving passes: its notification options (list-changed) included."""
    return app._mcp_server.create_initialization_options()


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
