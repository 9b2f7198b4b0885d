"""Every reach into FastMCP's and the MCP SDK's private parts, in one place.

These names are not public API, so an upgrade may move them: `tests/test_internals.py` is the
canary that fails loudly when one of them is gone or changed shape. Both faces use this module, so
it sits at the bottom of the package with the settings and the errors.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

from fastmcp import FastMCP
from mcp.client._transport import TransportStreams
from mcp.server.lowlevel import Server
from mcp.server.models import InitializationOptions
from mcp.shared._httpx_utils import create_mcp_http_client

__all__ = ["TransportStreams", "create_mcp_http_client", "initialization_options", "lifespan", "lowlevel_server"]


def lifespan(app: FastMCP) -> AbstractAsyncContextManager[Any]:
    """What `FastMCP.run_stdio_async` enters around serving (which cannot be handed streams)."""
    return app._lifespan_manager()


def lowlevel_server(app: FastMCP) -> Server[Any]:
    """The SDK server FastMCP drives; the stdio face runs one serving loop of it per protocol era."""
    return app._mcp_server


def initialization_options(app: FastMCP) -> InitializationOptions:
    """The options FastMCP's own stdio serving passes: its notification options (list-changed) included."""
    return app._mcp_server.create_initialization_options()
