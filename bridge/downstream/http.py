"""The Streamable HTTP transport, watched: every status, every redirect, every body capped.

HTTP bodies are never decompressed (the bridge asks for `identity`), so the bytes read are the
memory used; one JSON body or SSE event is held to `MAX_MESSAGE_BYTES`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx2
from mcp.client.streamable_http import streamable_http_client

from bridge.downstream.framing import MAX_MESSAGE_BYTES
from bridge.downstream.pinning import PinnedTransport
from bridge.errors import BridgeError
from bridge.internals import TransportStreams, create_mcp_http_client
from bridge.models import HttpServerSpec
from bridge.ssrf import reach_for

if TYPE_CHECKING:
    from bridge.downstream.connection import Connection

_MIB = 1024 * 1024
MAX_SCOPE_CHARS = 1000  # of a step-up challenge: each step-up asks for more, so this bounds their number
_CHALLENGE_FIELD = re.compile(r'(?:^|[\s,])([A-Za-z_]+)=(?:"([^"]*)"|([^\s,]*))')


def _challenge_field(challenge: str, name: str) -> str | None:
    """One parameter of a `WWW-Authenticate: Bearer` challenge (RFC 6750 §3), quoted or not."""
    for key, quoted, bare in _CHALLENGE_FIELD.findall(challenge):
        if key.lower() == name:
            return quoted or bare
    return None


@dataclass(frozen=True)
class Redirect:
    """A redirect answer; when it is the last answer, the SDK did not follow it."""

    status: int
    target: str
    loop: bool  # it points back to a URL already requested

    def error(self) -> BridgeError:
        """`http_error`, not `connect_failed`: the server is reachable and answered; retrying cannot help."""
        if self.loop:
            message = f"The server redirects in a loop (HTTP {self.status} to {self.target}); check the URL."
        else:
            message = (
                f"The server redirected (HTTP {self.status} to {self.target}); the bridge follows only redirects "
                "that stay on the same origin and keep the method. Register that URL if it is the MCP endpoint."
            )
        return BridgeError("http_error", message, status=self.status, redirect_loop=self.loop)


class _MessageTooLarge(httpx2.StreamError):
    """A response body over `MAX_MESSAGE_BYTES`. A `StreamError`, because that is what the SDK
    turns into a JSON-RPC error for the request it answers, instead of failing the whole session."""


class _CappedBody(httpx2.AsyncByteStream):
    """A response body that fails once it has yielded more than `MAX_MESSAGE_BYTES`."""

    def __init__(self, stream: httpx2.AsyncByteStream, connection: Connection) -> None:
        self._stream = stream
        self._connection = connection

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._stream:
            size += len(chunk)
            if size > MAX_MESSAGE_BYTES:
                self._connection.oversized = True
                raise _MessageTooLarge(f"The response body is over {MAX_MESSAGE_BYTES // _MIB} MiB.")
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


@asynccontextmanager
async def http_transport(connection: Connection, spec: HttpServerSpec) -> AsyncIterator[TransportStreams]:
    async def watch(response: httpx2.Response) -> None:
        """Record what came back; never decode, and cap every body but an event stream (the SDK caps each event)."""
        connection.statuses.append(response.status_code)
        connection.content_type = response.headers.get("content-type", "")[:100]
        sent_to = response.request.url.copy_with(fragment=None)
        if response.status_code == 401 and sent_to == endpoint:
            # Any 401 of the MCP endpoint (not of a discovery or token request): the spec's discovery,
            # run by the sign-in, decides whether a sign-in can answer it.
            connection.challenged = True
        if response.status_code == 403 and sent_to == endpoint:
            challenge = response.headers.get("www-authenticate", "")
            if _challenge_field(challenge, "error") == "insufficient_scope":
                connection.step_up_scope = (_challenge_field(challenge, "scope") or "")[:MAX_SCOPE_CHARS]
        connection.requested.add(str(sent_to))
        if response.has_redirect_location:
            target = sent_to.join(response.headers["location"]).copy_with(fragment=None)
            connection.redirect = Redirect(
                status=response.status_code,
                target=str(target.copy_with(userinfo=b"", query=None)),  # query and userinfo may hold secrets
                loop=str(target) in connection.requested,
            )
        response.headers.pop("content-encoding", None)
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            response.stream = _CappedBody(response.stream, connection)

    endpoint = httpx2.URL(spec.url).copy_with(fragment=None)
    headers = {name: value for name, value in spec.headers.items() if name.lower() != "accept-encoding"}
    headers["Accept-Encoding"] = "identity"
    timeout = httpx2.Timeout(connection.settings.timeout)
    reach = reach_for(spec.registered_by, connection.settings.conversation_reach)
    if reach == "anywhere":  # the operator's own choice of URL: dialled as any HTTP client would
        client = create_mcp_http_client(headers=headers, timeout=timeout, auth=connection.auth())
    else:
        def refused(why: str) -> None:
            connection.refused = BridgeError(
                "forbidden", f"The bridge does not connect there: {why} (servers added in conversation may not)."
            )

        pinned = PinnedTransport(reach, connection.settings.resolver, refused)
        client = httpx2.AsyncClient(
            headers=headers, timeout=timeout, transport=pinned, trust_env=False, auth=connection.auth()
        )
    client.event_hooks["response"] = [watch]
    transport = streamable_http_client(spec.url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES)
    async with client, transport as streams:
        yield streams
