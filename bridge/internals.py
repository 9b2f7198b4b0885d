"""Every reach into FastMCP's and the MCP SDK's private parts, in one place.

These names are not public API, so an upgrade may move them: `tests/test_internals.py` is the
canary that fails loudly when one of them is gone or changed shape. Both faces use this module, so
it sits at the bottom of the package with the settings and the errors.
"""

from __future__ import annotations

import sys
from collections.abc import Container
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.auth.middleware import RequireAuthMiddleware
from fastmcp.server.http import StreamableHTTPASGIApp
from mcp.client._transport import TransportStreams
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.shared._httpx_utils import create_mcp_http_client
from starlette.applications import Starlette

__all__ = [
    "TransportStreams",
    "create_mcp_http_client",
    "fastmcp_env_file",
    "initialization_options",
    "lifespan",
    "live_http_sessions",
    "lowlevel_server",
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


def live_http_sessions(app: Starlette) -> Container[str]:
    """The ids of the Streamable HTTP sessions FastMCP's session manager holds right now (a live
    view; empty before the app's lifespan has started). The SDK keeps them in `_server_instances`
    and forgets one however it ends: DELETE, idle timeout, crash."""
    for route in app.routes:
        endpoint = getattr(route, "endpoint", None)
        endpoint = endpoint.app if isinstance(endpoint, RequireAuthMiddleware) else endpoint
        if isinstance(endpoint, StreamableHTTPASGIApp) and endpoint.session_manager is not None:
            return endpoint.session_manager._server_instances
    return {}


def fastmcp_env_file() -> str:
    """The `.env` file FastMCP's settings were read from when fastmcp was imported."""
    return sys.modules["fastmcp.settings"].ENV_FILE
