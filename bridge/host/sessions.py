"""Streamable HTTP sessions, bounded per client, the least recently used idle one making room.

The SDK's session manager keeps up to 10,000 sessions, 30 minutes idle each, in one table for
everyone: one caller opening sessions in a loop crowds out the real host. `SessionsPerClient`
sits in front of it (after authentication, so it knows who asks) and lets each client hold at most
`limit` sessions. A request that would open one more closes that client's least recently used
*idle* session (no request in flight on it, no open GET stream) to make room, so a client that
never closes its sessions (the conformance suite opens one per scenario) keeps being served; only
when every one of its sessions is busy does it get 503 and a JSON-RPC error saying why.

- Who a client is: the OAuth client (or the account behind a launcher's proxy, or the bearer
  token's holder), from the access token; with no authentication configured there is only this
  machine, one client. With authentication configured, a request without a valid token opens no
  session: FastMCP's `RequireAuthMiddleware` answers it 401 before it reaches the manager, and this
  guard does not count it.
- Which sessions are open: the ones the SDK's manager still holds (`internals.live_http_sessions`),
  so a session that ended by DELETE, idle timeout or crash frees its place at once; the sessions
  being opened right now count too, so concurrent openings cannot overshoot.
- Which are idle and since when: this guard counts each session's requests in flight (the
  client's own, by its session id) and when the last one ended; closing one is the manager's own
  step (`internals.close_http_session`): its id answers 404 from then on.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.internals import close_http_session, live_http_sessions

logger = logging.getLogger("mcp_bridge.http")

LOCAL_CLIENT = "this machine (no authentication)"


def client_key(scope: Scope, authenticated: bool) -> str | None:
    """Who is asking, or None for a request that has no valid token where one is required."""
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        token = user.access_token
        return f"{token.client_id}/{getattr(token, 'subject', None) or ''}"
    return None if authenticated else LOCAL_CLIENT


def opens_a_session(scope: Scope, mcp_path: str) -> bool:
    """A handshake-era POST to the MCP endpoint without a session id: the SDK opens a session for it
    (2026-07-28 requests are stateless and open none)."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != mcp_path:
        return False
    headers = Headers(scope=scope)
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    return MCP_SESSION_ID_HEADER not in headers and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)


@dataclass
class _Use:
    """One session this guard saw opened: whose, how many requests are in flight on it, when the last ended."""

    client: str
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)


class SessionsPerClient:
    """At most `limit` open sessions per client (see the module docstring)."""

    def __init__(self, app: ASGIApp, limit: int, authenticated: bool, mcp_path: str = "/mcp") -> None:
        self.app = app
        self.limit = limit
        self.authenticated = authenticated
        self.mcp_path = mcp_path
        self._uses: dict[str, _Use] = {}
        self._owned: dict[str, set[str]] = defaultdict(set)
        self._opening: dict[str, int] = defaultdict(int)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        if session is not None:
            await self._serve_in(session, scope, receive, send)
            return
        key = client_key(scope, self.authenticated) if opens_a_session(scope, self.mcp_path) else None
        if key is None:
            await self.app(scope, receive, send)
            return
        owned = self._owned[key]
        live = live_http_sessions(scope["app"])
        for ended in [sid for sid in owned if sid not in live]:
            owned.discard(ended)
            self._uses.pop(ended, None)
        evicted: list[str] = []
        while len(owned) + self._opening[key] >= self.limit:
            idle = [sid for sid in owned if not self._uses[sid].in_flight]
            if not idle:
                await _too_many(self.limit)(scope, receive, send)
                return
            victim = min(idle, key=lambda sid: self._uses[sid].last_used)
            owned.discard(victim)
            self._uses.pop(victim)
            evicted.append(victim)

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start":
                opened = Headers(raw=message.get("headers", [])).get(MCP_SESSION_ID_HEADER)
                if opened is not None:
                    owned.add(opened)
                    self._uses[opened] = _Use(key)
            await send(message)

        self._opening[key] += 1
        try:
            for victim in evicted:
                if await close_http_session(scope["app"], victim):
                    logger.info("closed the least recently used idle session of %s to make room", key)
            await self.app(scope, receive, record)
        finally:
            self._opening[key] -= 1
            if not owned and not self._opening[key]:  # nothing left to remember for this client
                self._owned.pop(key, None)
                self._opening.pop(key, None)

    async def _serve_in(self, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        """A request in an open session: counted while in flight, so the session is not idle."""
        use = self._uses.get(session)
        if use is None or use.client != client_key(scope, self.authenticated):
            await self.app(scope, receive, send)
            return
        use.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            use.in_flight -= 1
            use.last_used = time.monotonic()


def _too_many(limit: int) -> Response:
    error = {
        "code": -32000,
        "message": f"Too many open sessions for this client, every one busy (at most {limit}, "
        "MCP_MAX_HTTP_SESSIONS_PER_CLIENT); wait for a request to end, or close a session (DELETE).",
    }
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error})
    return Response(body, status_code=503, media_type="application/json")
