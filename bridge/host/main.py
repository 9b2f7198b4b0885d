"""Start the bridge: settings, the developer's servers, the app, then stdio or HTTP serving.

Everything a new user can get wrong is said here, once, on stderr, before serving: a bad setting
(exit 2, naming it), a misspelt `MCP_*` variable (a warning with the close match), a workspace
stdio children cannot use (a warning naming `MCP_WORKSPACE`), a port that cannot be bound (exit 2).
In stdio mode stdout is the protocol: logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from fastmcp.server.auth import AuthProvider
from pydantic import ValidationError

from bridge.host import stdio
from bridge.host.app import build_app
from bridge.host.http import BearerToken, PortUnusable, bind, is_loopback, serve_http
from bridge.settings import (
    ConfigFileError,
    Settings,
    config_path,
    describe_error,
    developer_servers,
    misspelt,
)
from bridge.tools import Bridge

logger = logging.getLogger("mcp_bridge")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mcp-bridge", description="Serve the MCP bridge over stdio (default) or HTTP.")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default: loopback only)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    return parser.parse_args(argv)


def _fail(message: str) -> int:
    print(f"mcp-bridge: {message}", file=sys.stderr)
    return 2


def main(
    argv: list[str] | None = None,
    *,
    config_servers: Mapping[str, Mapping[str, Any]] | None = None,
    auth: AuthProvider | None = None,
) -> int:
    """Run the bridge. `config_servers` is the developer's `MCP_SERVERS` (else read from
    `MCP_CONFIG` or the checkout's `config.py`); `auth` is for launchers that bring a FastMCP
    OAuth provider (see README)."""
    args = _parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for name, close in misspelt(os.environ):
        logger.warning("%s is not a setting of the bridge%s", name, f"; did you mean {close}?" if close else "")
    try:
        settings = Settings()
    except ValidationError as exc:
        return _fail(f"invalid configuration: {describe_error(exc)}")
    if settings.auth_token is not None:
        if auth is not None:
            return _fail("MCP_AUTH_TOKEN and an auth provider are both set; choose one.")
        auth = BearerToken(settings.auth_token.get_secret_value())
    if args.transport == "http" and not is_loopback(args.host) and auth is None:
        return _fail(
            f"refusing to serve on {args.host} without authentication; set MCP_AUTH_TOKEN "
            "(or bind to 127.0.0.1 and use a tunnel)."
        )
    try:
        servers = developer_servers(config_path(os.environ)) if config_servers is None else config_servers
        bridge = Bridge(settings, dict(servers))
    except (ConfigFileError, ValueError) as exc:
        return _fail(f"invalid configuration: {exc}")
    if bridge.workspace_problem is not None:
        logger.warning("stdio servers cannot start: %s", bridge.workspace_problem)
    if bridge.sandbox_problem is not None:
        logger.warning("stdio servers cannot start: %s", bridge.sandbox_problem)
    try:
        app = build_app(bridge, auth)
        if args.transport == "http":
            try:
                sock = bind(args.host, args.port)
            except PortUnusable as exc:
                return _fail(str(exc))
            serve_http(app, sock, settings)
        else:
            # Served on the worker loop itself: a tool call then awaits its downstream session
            # there, with no hop between threads (uvicorn keeps the main thread for its signals).
            try:
                bridge.runtime.run(lambda: stdio.serve_stdio(app))
            except KeyboardInterrupt:  # Ctrl-C: closing the bridge below stops serving and every child
                return 130
    finally:
        bridge.close()
    return 0
