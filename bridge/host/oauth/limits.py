"""What a stranger can make the authorization server read and keep, bounded; and who is asking.

Registration, `/authorize`, `/token` and the consent form answer anyone who reaches the bridge
(through a tunnel: anyone on the internet), so each of them is bounded, and a bound that is
reached makes room by ending what is oldest and unused rather than by refusing newcomers: a
flood must never lock the owner out of pairing.

- Bodies: at most `MAX_BODY` bytes; a larger one is answered 413 as soon as that is known (from
  `Content-Length`, else after `MAX_BODY` bytes), never read further (`BodyLimit`).
- Client metadata: named fields bounded (`metadata_problem`), the whole record at most
  `MAX_CLIENT_METADATA` bytes.
- Clients: at most `MAX_CLIENTS`. A client that never got a token is *unused*: each source keeps at
  most `MAX_UNUSED_CLIENTS_PER_SOURCE` of them, and when the table is full the oldest unused client
  of the source holding the most goes first; one with a consent request waiting goes last (a
  public CIMD client may have been named first by a stranger while the owner pairs with it).
  Unused clients are forgotten after `UNUSED_CLIENT_S`.
- Pending consents: one per client and source (a new request ends the abandoned one), at most
  `MAX_PENDING_PER_SOURCE` per source and `OAuthSettings.max_pending_requests` in all, the oldest
  of the source holding the most ending first.

With those, the state file holds at most ~1 MB whatever strangers send (the test that fills every
table measures it), so reading it after a write costs the loop milliseconds, and writes run in a
worker thread.

A *source* is the peer's address; behind a tunnel on this machine (a loopback peer) it is the
last `X-Forwarded-For` hop, the one the tunnel itself added. A stranger who forges that header
can only spread over more sources, and meets the global bounds.
"""

from __future__ import annotations

import json

from mcp.shared.auth import OAuthClientInformationFull
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bridge.host.addresses import is_loopback

MAX_BODY = 64 * 1024
MAX_CLIENTS = 64
MAX_UNUSED_CLIENTS_PER_SOURCE = 8
UNUSED_CLIENT_S = 86400
MAX_PENDING_PER_SOURCE = 4
MAX_CLIENT_NAME = 200
MAX_REDIRECT_URIS = 8
MAX_URL = 2048
MAX_CLIENT_METADATA = 8 * 1024
MAX_STATE = 2048
MAX_CODE_CHALLENGE = 128  # RFC 7636: a verifier is 43-128 characters, its S256 challenge 43
UNKNOWN_SOURCE = "unknown"


def request_source(connection: HTTPConnection | None) -> str:
    """Who is asking, as far as this bridge can tell (see the module docstring)."""
    if connection is None or connection.client is None:
        return UNKNOWN_SOURCE
    peer = connection.client.host
    if is_loopback(peer):
        hops = [hop.strip() for hop in ",".join(connection.headers.getlist("x-forwarded-for")).split(",")]
        hops = [hop for hop in hops if hop]
        if hops:
            return hops[-1][:64]
    return peer


def metadata_problem(info: OAuthClientInformationFull) -> str | None:
    """Why a client's metadata is too large to keep, or None."""
    if info.client_name is not None and len(info.client_name) > MAX_CLIENT_NAME:
        return f"client_name is longer than {MAX_CLIENT_NAME} characters"
    uris = info.redirect_uris or []
    if len(uris) > MAX_REDIRECT_URIS:
        return f"more than {MAX_REDIRECT_URIS} redirect_uris"
    if any(len(str(uri)) > MAX_URL for uri in uris):
        return f"a redirect URI is longer than {MAX_URL} characters"
    size = len(json.dumps(info.model_dump(mode="json", exclude_none=True)).encode())
    if size > MAX_CLIENT_METADATA:
        return f"the client metadata is {size} bytes, more than {MAX_CLIENT_METADATA}"
    return None


class BodyLimit:
    """Answer 413 to a request body over `limit` bytes on `paths`, reading no more of it."""

    def __init__(self, app: ASGIApp, paths: frozenset[str], limit: int = MAX_BODY) -> None:
        self.app = app
        self.paths = paths
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS") or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._refuse(scope, receive, send)
                return
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        # `Connection: close`: the rest of the body is never read, so the connection cannot be reused.
        response = JSONResponse(
            {"error": "invalid_request", "error_description": f"The request body is over {self.limit} bytes."},
            status_code=413,
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)
