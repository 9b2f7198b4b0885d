"""Serving Streamable HTTP: a pre-bound socket, logs on stderr, Host and Origin checked.

HTTP mode is meant to sit behind a tunnel, where anyone can reach it: Host and Origin are checked on
every request (DNS rebinding), and a bearer token (`MCP_AUTH_TOKEN`) or an OAuth provider guards it;
without either it binds to loopback only.
"""

from __future__ import annotations

import copy
import hmac
import ipaddress
import logging
import socket

import uvicorn.config
from fastmcp import FastMCP
from fastmcp.server.auth import AccessToken, TokenVerifier

from bridge.settings import Settings


class PortUnusable(Exception):
    """The port cannot be bound; the message names it and why."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerToken(TokenVerifier):
    """One static bearer token, compared in constant time (FastMCP's StaticTokenVerifier looks
    tokens up in a dict)."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._expected = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._expected):
            return AccessToken(token=token, client_id="host", scopes=[])
        return None


def bind(host: str, port: int) -> socket.socket:
    """Bind first, so `--port 0` works and the log line names the real port."""
    if not 0 <= port <= 65535:
        raise PortUnusable(f"--port {port} is out of range (0-65535)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise PortUnusable(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def serve_http(app: FastMCP, sock: socket.socket, settings: Settings) -> None:
    """Serve on the bound socket; uvicorn logs go to stderr.

    Host/Origin protection is strict: loopback names, the bound address and `MCP_ALLOWED_HOSTS` are
    the only Host values served (others get 421); a browser Origin must be same-origin, loopback or in
    `MCP_ALLOWED_ORIGINS` (others get 403).
    """
    host, bound = sock.getsockname()[:2]
    log = logging.getLogger("mcp_bridge")
    log.info("serving Streamable HTTP at http://%s:%d/mcp", host, bound)
    log.info(
        "authentication: %s; extra allowed Host names: %s",
        "required" if app.auth is not None else "none (loopback only)",
        ", ".join(settings.allowed_hosts) or "none (set MCP_ALLOWED_HOSTS to your tunnel's host name)",
    )
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    app.run(
        transport="http",
        host=host,
        port=bound,
        path="/mcp",
        show_banner=False,
        sockets=[sock],
        uvicorn_config={"log_config": log_config},
        host_origin_protection=True,
        allowed_hosts=list(settings.allowed_hosts),
        allowed_origins=list(settings.allowed_origins),
    )
