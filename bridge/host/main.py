"""Start the bridge: settings, the developer's servers, the app, then stdio or HTTP serving.

Everything a new user can get wrong is said here, once, on stderr, before serving: a bad setting
(exit 2, naming it), a misspelt `MCP_*` variable (a warning with the close match), a workspace
stdio children cannot use (a warning naming `MCP_WORKSPACE`; so is one that holds the bridge's own
code, which children then see read-only), a port that cannot be bound (exit 2).
In stdio mode stdout is the protocol: logs go to stderr.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import fastmcp
from pydantic import ValidationError

from bridge import telemetry
from bridge.arguments import Parser
from bridge.host import stdio
from bridge.host.app import build_app
from bridge.host.serving import Serving
from bridge.internals import fastmcp_env_file
from bridge.settings import (
    ConfigFileError,
    Settings,
    config_path,
    describe_error,
    developer_servers,
    misspelt,
    own_paths_inside,
)
from bridge.tools import Bridge
from bridge.wording import log_to_stderr

if TYPE_CHECKING:
    from fastmcp.server.auth import AuthProvider

logger = logging.getLogger("mcp_bridge")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(prog="mcp-bridge", description="Serve the MCP bridge over stdio (default) or HTTP.")
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
    signals = _Signals()
    log_to_stderr(logging.WARNING, "%(asctime)s %(name)s %(levelname)s %(message)s")
    for name, close in misspelt(os.environ):
        logger.warning("%s is not a setting of the bridge%s", name, f"; did you mean {close}?" if close else "")
    try:
        settings = Settings()
    except ValidationError as exc:
        return _fail(f"invalid configuration: {describe_error(exc)}")
    _log_levels(settings.log_level)
    if (problem := _env_file_read()) is not None:
        return _fail(problem)
    try:
        servers = developer_servers(config_path(os.environ)) if config_servers is None else config_servers
        bridge = Bridge(settings, dict(servers), served_over_http=args.transport == "http")
    except (ConfigFileError, ValueError) as exc:
        return _fail(f"invalid configuration: {exc}")
    if bridge.workspace_problem is not None:
        logger.warning("stdio servers cannot start: %s", bridge.workspace_problem)
    elif held := own_paths_inside(settings.workspace, bridge.own):
        logger.warning("MCP_WORKSPACE %s holds the bridge's own %s: children cannot write them", settings.workspace, ", ".join(held))
    if bridge.sandbox_problem is not None:
        logger.warning("stdio servers cannot start: %s", bridge.sandbox_problem)
    try:
        serving = _http(bridge, settings, args, auth) if args.transport == "http" else _stdio(bridge)
        if isinstance(serving, int):
            return serving
        logger.info("workspace: %s; state: %s", settings.workspace, settings.state_dir)
        logger.info("stop with Ctrl-C%s", "" if args.transport == "http" else ", or by closing stdin")
        if not telemetry.configured():  # FastMCP's spans would be no-ops costing a warm call ~50 µs
            fastmcp.settings.telemetry_mode = "off"
        gc.freeze()  # what start-up made lives as long as the bridge: collections need not look at it again
        return _serve_until_stopped(bridge, serving, signals)
    finally:
        bridge.close()


def _log_levels(level: str) -> None:
    """The bridge's own lines from MCP_LOG_LEVEL; its dependencies' (httpx, the SDK, FastMCP) only
    from WARNING, unless the level is debug: their INFO lines (one per downstream HTTP request) are
    noise where nothing is wrong."""
    debug = level == "debug"
    logging.getLogger().setLevel(logging.DEBUG if debug else logging.WARNING)
    logging.getLogger("fastmcp").setLevel(logging.DEBUG if debug else logging.WARNING)  # it does not propagate
    logging.getLogger("mcp_bridge").setLevel(level.upper())


class _StopAsked(Exception):
    """A signal arrived while the main thread waited on serving."""


class _Signals:
    """Ctrl-C and SIGTERM, taken from the start: counted while the bridge starts, and raised as
    `_StopAsked` only into the main thread's wait on serving (never into start-up's middle)."""

    def __init__(self) -> None:
        self.count = 0
        self.last = signal.SIGTERM
        self.waiting = False
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # a background job keeps ignoring it
            signal.signal(signal.SIGINT, self._take)
        signal.signal(signal.SIGTERM, self._take)

    def _take(self, signum: int, frame: object) -> None:
        self.count, self.last = self.count + 1, signal.Signals(signum)
        if self.waiting:
            self.waiting = False
            raise _StopAsked


def _serve_until_stopped(bridge: Bridge, serving: Serving, signals: _Signals) -> int:
    """Serve on the worker loop (a tool call then awaits its downstream session there, with no hop
    between threads) while the main thread waits and takes the signals. Ctrl-C or SIGTERM asks the
    face to stop; once it has, the bridge closes (children stopped, audit written) and exits 0. A
    second signal while it stops gives up waiting: 130 (or 143), and closing cancels what is left."""
    served = bridge.runtime.start(serving.serve)
    handled = 0
    while True:
        if signals.count > handled:
            if handled:
                return 128 + signals.last.value
            handled = signals.count
            logger.info("%s: stopping (send it again to stop at once)", signals.last.name)
            bridge.runtime.call(serving.stop)
        try:
            signals.waiting = True
            if signals.count == handled:  # else one came since the check above: go round
                served.result()
                signals.waiting = False
                break
            signals.waiting = False
        except _StopAsked:  # the handler stopped the waiting
            pass
    if handled:
        logger.info("stopped")
    return 0


def _stdio(bridge: Bridge) -> Serving:
    logger.info("serving MCP over stdio: the host that starts the bridge speaks on its stdin and stdout")
    return stdio.stdio_serving(build_app(bridge))


def _http(bridge: Bridge, settings: Settings, args: argparse.Namespace, launcher: AuthProvider | None) -> Serving | int:
    """Bind, choose the authentication (the OAuth issuer may need the bound port): how to serve,
    or the exit code of a refusal. Imported here: a stdio bridge starts without the HTTP face, its
    OAuth server and what they import (httpx, its CLI's rich, ...)."""
    from bridge.host.auth import AuthRefused, choose_auth
    from bridge.host.http import PortUnusable, bind, http_serving

    try:
        sock = bind(args.host, args.port)
    except PortUnusable as exc:
        return _fail(str(exc))
    try:
        face = choose_auth(settings, args.host, sock.getsockname()[1], launcher)
    except AuthRefused as exc:
        sock.close()
        return _fail(str(exc))
    app = build_app(bridge, face.provider)
    return http_serving(app, sock, settings, face)


def _env_file_read() -> str | None:
    """Why serving must stop because fastmcp, imported before the bridge, read a `.env` file."""
    env_file = fastmcp_env_file()
    if env_file != os.devnull and os.path.isfile(env_file):
        return (
            f"fastmcp was imported before the bridge and read its settings from {os.path.abspath(env_file)}; "
            "import bridge first in your launcher (the bridge reads no configuration from the working directory)."
        )
    return None
