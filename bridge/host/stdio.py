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
still be running, and the new era must not wait for it. Every other sequence of
messages reaches a single SDK loop unchanged.

This mirrors `FastMCP.run_stdio_async`, which cannot be handed streams, so it reaches FastMCP's
lifespan and low-level server through `bridge.internals` (the canary test watches them).

When stdin and stdout are pipes or sockets (what hosts hand their servers; Node-based ones give
sockets), the wire is read and written here, on the event loop, through non-blocking descriptors.
The SDK's `stdio_server` reads each line and writes each answer through worker threads: three
thread hops per call, about 0.3 ms of a 2.7 ms warm bridged call, and a reader that cancellation
cannot stop (Ctrl-C waited for one more line on stdin). Like the SDK, serving points fd 0 at the
null device and fd 1 at stderr, so children and stray prints never reach the wire. A terminal is
read on the loop too, but left blocking (read only once readable): non-blocking mode would leak to
the terminal's other users. A file is served by the SDK's `stdio_server`, as readiness means
nothing for a file.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any

import anyio
from fastmcp import FastMCP
from fastmcp.server.context import reset_transport, set_transport
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from bridge import internals
from bridge.downstream.framing import READ_SIZE, LineFramer, PipeReader, PipeWriter, ReadEnd, encode
from bridge.host.parsing import Inbound, Refused, parse_line
from bridge.host.serving import Serving

Send = Callable[[SessionMessage], Awaitable[None]]

_LEAD_LIMIT = 8  # the SDK's `_PRE_REQUEST_REPLAY_LIMIT`: frames kept from before the first request



def stdio_serving(app: FastMCP) -> Serving:
    """Serve `app` on stdin/stdout until the host closes stdin, or `stop` cancels it (before or
    after serving began: both run in the worker loop's thread)."""
    scope: anyio.CancelScope | None = None
    stopped = False

    async def serve() -> None:
        nonlocal scope
        with anyio.CancelScope() as scope:
            if not stopped:
                await serve_stdio(app)

    def stop() -> None:
        nonlocal stopped
        stopped = True
        if scope is not None:
            scope.cancel()

    return Serving(serve, stop)


async def serve_stdio(app: FastMCP) -> None:
    """Serve `app` on this process's stdin/stdout, accepting `initialize` after `server/discover`."""
    token = set_transport("stdio")
    try:
        async with internals.lifespan(app), _stdio() as (stdin, send):
            await _Relay(app, send).run(stdin)
    finally:
        reset_transport(token)


@asynccontextmanager
async def _stdio() -> AsyncIterator[tuple[AsyncIterable[Inbound], Send]]:
    """The wire's messages in, and how to send one out: on this loop for pipes, else the SDK's way."""
    if os.name == "posix" and _is_pipe_or_socket(0) and _is_pipe_or_socket(1):
        with _claimed(0) as wire_in, _claimed(1) as wire_out:
            writer = PipeWriter(wire_out)  # put back blocking by `_claimed`, never closed here

            async def send(message: SessionMessage) -> None:
                await writer.send(encode(message))

            yield _messages(PipeReader(wire_in)), send
    elif os.isatty(0):
        # A person at a terminal: read it on the loop too (blocking, but only once it is readable),
        # so that Ctrl-C does not wait for one more line in the SDK's reader thread.
        async def write(message: SessionMessage) -> None:
            data = encode(message)
            while data:
                data = data[os.write(1, data) :]

        yield _messages(_terminal(0)), write
    else:
        async with stdio_server() as (read_stream, write_stream), read_stream, write_stream:
            yield read_stream, write_stream.send


def _is_pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextmanager
def _claimed(fd: int) -> Iterator[int]:
    """The wire behind `fd` (0 or 1) on a private non-blocking descriptor, until it is put back."""
    wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    diversion = _diversion(fd)
    os.dup2(diversion, fd)
    os.close(diversion)
    os.set_blocking(wire, False)
    try:
        yield wire
    finally:
        os.set_blocking(wire, True)
        os.dup2(wire, fd)
        os.close(wire)


def _diversion(fd: int) -> int:
    """What fd 0 reads meanwhile (the null device) and where fd 1 writes (stderr, if it is open)."""
    if fd == 1:
        with suppress(OSError):
            return os.dup(2)
    return os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)


async def _terminal(fd: int) -> AsyncIterator[bytes]:
    """What is typed at a terminal, line by line, until Ctrl-D."""
    while True:
        await anyio.wait_readable(fd)
        if not (chunk := os.read(fd, READ_SIZE)):
            return
        yield chunk


async def _messages(chunks: AsyncIterable[bytes]) -> AsyncIterator[Inbound]:
    """Each line read parsed as the SDK's `stdio_server` parses it (a message, or why it is not
    one), or a request its parser refuses, to answer at once (`bridge.host.parsing`)."""
    framer = LineFramer()
    async for chunk in chunks:  # a pipe is put back blocking by `_claimed`, never closed here
        for line in framer.feed(chunk):
            yield parse_line(line)
    if rest := framer.rest():  # a last line without its newline
        yield parse_line(rest)


def _request(item: Inbound) -> JSONRPCRequest | None:
    if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCRequest):
        return item.message
    return None


class _Segment(ReadEnd):
    """One SDK serving loop, the era its first request chose, and the answers it still owes.

    It is the loop's read stream and its write stream both. The SDK's dispatcher reads the wire
    through it, with no task or memory stream between (each cost a call one more task switch and
    two checkpoints); each answer goes straight to stdout, settling its request. When `initialize`
    arrives on a 2026-07-28 segment, the segment waits until it owes nothing, then ends its stream
    and hands that `initialize` on (`handed_on`) to the next segment.
    """

    def __init__(self, send: Send, wire: AsyncIterator[Inbound], first: Inbound | None = None) -> None:
        self._send = send
        self._wire = wire
        self._first = first
        self._lead: deque[Inbound] = deque()
        self.modern: bool | None = None
        self.owed: set[Any] = set()
        self.settled = anyio.Event()
        self.settled.set()
        self.ended = anyio.Event()  # no more input for this segment: the wire ended, or was handed on
        self.handed_on: Inbound | None = None

    async def opening(self) -> None:
        """Read up to the first request, which fixes the era (`modern`), keeping what came before it
        as the SDK does: at most `_LEAD_LIMIT` frames, the rest dropped."""
        while self.modern is None:
            item = await self._next()
            if item is None:
                return
            if self.modern is None and len(self._lead) >= _LEAD_LIMIT:  # not the first request: dropped
                continue
            self._lead.append(item)

    async def receive(self) -> Inbound:
        if self._lead:
            return self._lead.popleft()
        item = await self._next()
        if item is None:
            raise anyio.EndOfStream
        return item

    async def _next(self) -> Inbound | None:
        """The next item this segment takes from the wire, or None once it takes no more; a request
        no parser can take is answered here, and never reaches the SDK."""
        if self.ended.is_set():
            return None
        if self._first is not None:
            item, self._first = self._first, None
        else:
            try:
                item = await anext(self._wire)
                while isinstance(item, Refused):
                    await self._send(item.answer)
                    item = await anext(self._wire)
            except StopAsyncIteration:
                self.ended.set()
                return None
        request = _request(item)
        if request is not None and request.method == "initialize" and self.modern:
            await self.settled.wait()
            self.handed_on = item
            self.ended.set()
            return None
        self._takes(item, request)
        return item

    def _takes(self, item: Inbound, request: JSONRPCRequest | None) -> None:
        if request is not None:
            if self.modern is None:
                self.modern = internals.opens_modern(request)
            self.owed.add(request.id)
            self.settled = anyio.Event()
        elif isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCNotification):
            if item.message.method == "notifications/cancelled":  # a cancelled request is never answered
                self._settle((item.message.params or {}).get("requestId"))

    async def send(self, message: SessionMessage) -> None:
        if isinstance(message.message, JSONRPCResponse | JSONRPCError):
            self._settle(message.message.id)
        await self._send(message)

    async def aclose(self) -> None:
        """The loop is done with the streams; stdin and stdout stay open for the segments after it."""

    def _settle(self, request_id: Any) -> None:
        self.owed.discard(request_id)
        if not self.owed:
            self.settled.set()


class _Relay:
    """Opens a segment for stdin, and the next one each time a segment hands `initialize` on."""

    def __init__(self, app: FastMCP, send: Send) -> None:
        self._server = internals.lowlevel_server(app)
        self._options = internals.initialization_options(app)
        self._send = send

    async def run(self, stdin: AsyncIterable[Inbound]) -> None:
        wire = aiter(stdin)
        first: Inbound | None = None
        async with anyio.create_task_group() as tg:
            while True:
                segment = _Segment(self._send, wire, first)
                await segment.opening()
                # Served in the era the segment found; an old loop winds down on its own (it may
                # still be cancelling a call). End of input ends the last loop the way the SDK
                # does: whatever is still running is cancelled.
                tg.start_soon(internals.serve_era, self._server, segment, bool(segment.modern), self._options)
                await segment.ended.wait()
                if segment.handed_on is None:
                    return
                first = segment.handed_on
