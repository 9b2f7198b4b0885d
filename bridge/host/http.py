"""Serving Streamable HTTP: a pre-bound socket, logs on stderr, Host and Origin checked.

HTTP mode is meant to sit behind a tunnel, where anyone can reach it. Every request passes, in
order: FastMCP's Host/Origin guard (DNS rebinding), the authentication chosen in `bridge.host.auth`
(or, with none, `LoopbackOnly`), and the per-client session bound (`bridge.host.sessions`).
"""

from __future__ import annotations

import copy
import logging
import socket
from typing import Any

import httpx
import uvicorn
import uvicorn.config
from fastmcp import FastMCP
from fastmcp.server.dependencies import get_http_request
from starlette.middleware import Middleware

from bridge import internals
from bridge.host.auth import FaceAuth
from bridge.host.serving import Serving
from bridge.host.sessions import SessionsPerClient
from bridge.settings import Settings


class Refusals(logging.Filter):
    """Pass uvicorn's access lines for refused or failed requests (status 400 and up) only.

    Those are what an owner watching a tunnelled bridge needs to see; a served MCP request is in the
    audit log already, and formatting and writing its access line cost each warm call ~0.14 ms.
    A 421 is followed by a line naming the refused `Host` and the setting that would serve it (the
    line is logged within the request, whose Host FastMCP keeps in a context variable).
    """

    def __init__(self, served: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.served = served

    def filter(self, record: logging.LogRecord) -> bool:
        status = record.args[-1] if isinstance(record.args, tuple) and record.args else None
        if status == 421:
            self._misdirected()
        return not isinstance(status, int) or status >= 400

    def _misdirected(self) -> None:
        try:
            host = get_http_request().headers.get("host", "")
        except RuntimeError:  # logged outside a request: nothing to name
            return
        logging.getLogger("mcp_bridge").warning(
            "refused Host %r (421): served are loopback names and %s; to serve it, add its name to MCP_ALLOWED_HOSTS",
            host,
            ", ".join(self.served) or "no other",
        )


class PortUnusable(Exception):
    """The port cannot be bound; the message names it and why."""


def bind(host: str, port: int) -> socket.socket:
    """Bind first, so `--port 0` works and the log line names the real port.

    The protocol is named: asyncio sets TCP_NODELAY only on sockets whose `proto` says TCP, and an
    accepted socket inherits the listener's (0 unless named). Without it each answer's body, sent
    after its headers, waited for the host's delayed ACK: 40 ms a call on a warm connection.
    """
    if not 0 <= port <= 65535:
        raise PortUnusable(f"--port {port} is out of range (0-65535)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise PortUnusable(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def uvicorn_options(served: tuple[str, ...] = (), *, debug: bool = False) -> dict[str, Any]:
    """uvicorn's logs on stderr, from WARNING unless `debug` (MCP_LOG_LEVEL=debug), its access lines
    for refusals only (`Refusals`), and requests parsed by httptools: uvicorn's other parser, h11, is
    pure Python and cost a warm call over HTTP ~0.4 ms (5% of it) more, measured in alternating blocks."""
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    log_config["filters"] = {"refusals": {"()": Refusals, "served": served}}
    log_config["handlers"]["access"]["filters"] = ["refusals"]
    for name in ("uvicorn", "uvicorn.error"):  # its start and stop lines; the access lines stay INFO
        log_config["loggers"][name]["level"] = "DEBUG" if debug else "WARNING"
    return {"log_config": log_config, "http": "httptools"}


def http_serving(app: FastMCP, sock: socket.socket, settings: Settings, face: FaceAuth) -> Serving:
    """Serve on the bound socket, on the calling loop (the bridge's worker loop, so that a tool call
    makes no hop between threads; uvicorn then leaves the signals to the main thread); uvicorn logs
    go to stderr, access lines only for requests refused or failed, requests parsed by httptools
    (`uvicorn_options`). `stop` lets uvicorn finish as it does on its own Ctrl-C: open requests
    answered, connections closed, the lifespan ended, no traceback.

    Host/Origin protection is strict: loopback names, the bound address, `MCP_ALLOWED_HOSTS` and the
    public URL's host are the only Host values served (others get 421); a browser Origin must be
    same-origin, loopback, the public URL's origin (the consent page posts from there) or in
    `MCP_ALLOWED_ORIGINS` (others get 403).
    """
    host, bound = sock.getsockname()[:2]
    hosts, origins = list(settings.allowed_hosts), list(settings.allowed_origins)
    if face.public_url is not None:
        hosts += [name for name in [httpx.URL(face.public_url).host] if name not in hosts]
        origins.append(face.public_url)
    log = logging.getLogger("mcp_bridge")
    log.info("serving Streamable HTTP at http://%s:%d/mcp", host, bound)
    log.info("authentication: %s", face.method)
    log.info("served without credentials: %s", face.without_credentials)
    log.info(
        "Host names served besides loopback: %s",
        ", ".join(hosts) or "none (set MCP_ALLOWED_HOSTS to your tunnel's host name)",
    )
    sessions = Middleware(
        SessionsPerClient, limit=settings.max_http_sessions_per_client, authenticated=face.provider is not None
    )
    starlette = app.http_app(
        transport="http",
        path="/mcp",
        middleware=[*face.middleware, sessions],
        host_origin_protection=True,
        allowed_hosts=hosts,
        allowed_origins=origins,
    )
    options = uvicorn_options(tuple(hosts), debug=settings.log_level == "debug")
    server = uvicorn.Server(
        uvicorn.Config(starlette, host=host, port=bound, lifespan="on", timeout_graceful_shutdown=2, **options)
    )

    async def serve() -> None:
        # What `FastMCP.run_http_async` does, but with the server at hand, so that a stop is uvicorn's own.
        async with internals.lifespan(app):
            await server.serve(sockets=[sock])

    def stop() -> None:
        server.should_exit = True

    return Serving(serve, stop)
