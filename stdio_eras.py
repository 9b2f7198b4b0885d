"""Serve stdio so that a client may probe with `server/discover` and then send `initialize`.

The SDK fixes a stdio connection's protocol era at the client's first request: one carrying the
2026-07-28 `_meta` envelope makes a 2026-07-28 connection, which answers any later `initialize` with
-32022 ("the initialize handshake is not accepted"). Some clients do just that: they send
`server/discover`, take the answer, then `initialize` anyway (claude-code#96183, copilot-cli#4525),
and show no tools. The spec says the client is wrong; the user sees a bridge that does not work.

A 2026-07-28 connection keeps no state between requests, so nothing is lost by ending one. The
relay here sits between stdio and the SDK and runs each era in its own SDK serving loop (a
segment). When `initialize` arrives on a 2026-07-28 segment, the relay lets that segment answer
every request it still owes, closes it, and opens a handshake-era segment whose first request is
that `initialize`. The old loop winds down in the background: a call the client cancelled may
still be running in a worker thread, and the new era must not wait for it. Every other sequence of
messages reaches a single SDK loop unchanged.

This mirrors `FastMCP.run_stdio_async`, which cannot be handed streams, so it reaches FastMCP's
`_lifespan_manager` and `_mcp_server` (both stable through FastMCP 4; the tests drive this path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from fastmcp import FastMCP
from fastmcp.server.context import reset_transport, set_transport
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import PROTOCOL_VERSION_META_KEY, JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

if TYPE_CHECKING:  # the SDK's stream protocols, satisfied by stdio's context-carrying streams
    from mcp.shared._stream_protocols import ReadStream, WriteStream

Inbound = SessionMessage | Exception


async def serve_stdio(app: FastMCP) -> None:
    """Serve `app` on this process's stdin/stdout, accepting `initialize` after `server/discover`."""
    token = set_transport("stdio")
    try:
        async with app._lifespan_manager(), stdio_server() as (stdin, stdout):
            await _Relay(app._mcp_server, stdout).run(stdin)
    finally:
        reset_transport(token)


def _request(item: Inbound) -> JSONRPCRequest | None:
    if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCRequest):
        return item.message
    return None


def _opens_modern(request: JSONRPCRequest) -> bool:
    """The SDK's rule: a first request other than `initialize` that carries the 2026-07-28 envelope."""
    meta = (request.params or {}).get("_meta")
    return request.method != "initialize" and isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


class _Segment:
    """One SDK serving loop, the era its first request chose, and the answers it still owes."""

    def __init__(self) -> None:
        self.inbox: MemoryObjectSendStream[Inbound]
        self.inbox_out: MemoryObjectReceiveStream[Inbound]
        self.inbox, self.inbox_out = anyio.create_memory_object_stream[Inbound]()
        self.outbox_in: MemoryObjectSendStream[SessionMessage]
        self.outbox: MemoryObjectReceiveStream[SessionMessage]
        self.outbox_in, self.outbox = anyio.create_memory_object_stream[SessionMessage]()
        self.modern: bool | None = None
        self.owed: set[Any] = set()
        self.settled = anyio.Event()
        self.settled.set()

    def takes(self, item: Inbound) -> None:
        request = _request(item)
        if request is not None:
            if self.modern is None:
                self.modern = _opens_modern(request)
            self.owed.add(request.id)
            self.settled = anyio.Event()
        elif isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCNotification):
            if item.message.method == "notifications/cancelled":  # a cancelled request is never answered
                self._settle((item.message.params or {}).get("requestId"))

    def answers(self, message: SessionMessage) -> None:
        if isinstance(message.message, JSONRPCResponse | JSONRPCError):
            self._settle(message.message.id)

    def _settle(self, request_id: Any) -> None:
        self.owed.discard(request_id)
        if not self.owed:
            self.settled.set()


class _Relay:
    """Feeds stdin to the current segment and every segment's output to stdout."""

    def __init__(self, server: Server[Any], stdout: WriteStream[SessionMessage]) -> None:
        self._server = server
        self._stdout = stdout

    async def run(self, stdin: ReadStream[Inbound]) -> None:
        async with self._stdout, anyio.create_task_group() as tg:
            segment = self._open(tg)
            async with stdin:
                async for item in stdin:
                    request = _request(item)
                    if request is not None and request.method == "initialize" and segment.modern:
                        await segment.settled.wait()
                        await segment.inbox.aclose()
                        segment = self._open(tg)
                    segment.takes(item)
                    await segment.inbox.send(item)
            # End of input ends the last loop the way the SDK does: whatever is still running is cancelled.
            await segment.inbox.aclose()

    def _open(self, tg: TaskGroup) -> _Segment:
        segment = _Segment()
        tg.start_soon(self._server.run, segment.inbox_out, segment.outbox_in, self._server.create_initialization_options())
        tg.start_soon(self._forward, segment)
        return segment

    async def _forward(self, segment: _Segment) -> None:
        async with segment.outbox:
            async for message in segment.outbox:
                segment.answers(message)
                await self._stdout.send(message)
