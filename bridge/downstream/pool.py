"""Warm sessions: a pool of live client sessions on the worker loop, one owner task each.

A client session must be opened and closed by the same task (anyio cancel scopes), so each live
session has an owner task that opens it, waits, and closes it; callers from any task share the
open `Client` concurrently (the SDK multiplexes requests), so a slow call delays nobody.

Rules:
- idle sessions close after `idle_s` (0: one session per call); at most `max_sessions` live, the
  least recently used idle one closed first to make room;
- a session is closed, its children killed, when its registry entry changes or is removed, when a
  call on it times out or fails at the transport level (a hung or dead child is never reused), and
  at shutdown; the next call opens a fresh one, so a dead child costs one error;
- a server's tool list is fetched once per session and refreshed on
  `notifications/tools/list_changed` or when a call names a tool the cache does not know; one
  listing holds at most `max_list_pages` pages and `max_tools` tools (a server whose `nextCursor`
  never ends is a `protocol_error`, not a bridge out of memory);
- opening a session (spawn or connect, then the handshake) is bounded by `start_timeout`, each
  operation on an open one by `timeout`;
- a server that keeps failing to start or connect is held back (`bridge.downstream.backoff`): calls get its
  last error at once until the hold passes; eviction (a re-registration) lifts the hold.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from bridge import __version__, telemetry
from bridge.downstream.backoff import Backoff
from bridge.downstream.connection import Connection, SessionSettings
from bridge.downstream.stdio import ChildSupport
from bridge.errors import BridgeError, unknown_tool
from bridge.models import ServerSpec

logger = logging.getLogger("mcp_bridge.sessions")

CLIENT_INFO = types.Implementation(name="mcp-bridge", version=__version__)
# Beside the page and tool counts: 100 pages of one 16 MiB tool each would still be 1.6 GB.
MAX_LISTING_BYTES = 32 * 1024 * 1024
T = TypeVar("T")


@dataclass(eq=False)
class _Live:
    name: str
    connection: Connection
    client: Client | None = None
    tools: dict[str, types.Tool] | None = None
    in_use: int = 0
    last_used: float = 0.0
    stopping: bool = False
    kill: bool = False
    wake: anyio.Event = field(default_factory=anyio.Event)
    closed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def spec(self) -> ServerSpec:
        return self.connection.spec

    def touch(self) -> None:
        self.last_used = anyio.current_time()
        self.wake.set()

    def request_stop(self, *, kill: bool) -> None:
        self.stopping = True
        self.kill = self.kill or kill
        self.wake.set()


class Sessions:
    """The pool. `serve()` must run on the worker loop for as long as sessions may be used."""

    def __init__(
        self,
        settings: SessionSettings,
        backoff: Backoff,
        support: ChildSupport | None = None,
        auth_for: Callable[[str, ServerSpec], httpx2.Auth | None] = lambda name, spec: None,
    ) -> None:
        """`auth_for(name, spec)` signs a new session's HTTP requests in (stored OAuth tokens), or not."""
        self.settings = settings
        self.backoff = backoff
        self.support = support or ChildSupport()
        self._auth_for = auth_for
        self._live: dict[str, _Live] = {}
        self._tg: TaskGroup | None = None
        self._opening: dict[str, anyio.Lock] = {}
        self._freed = anyio.Event()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the task group that owner tasks live in; cancelling it closes every session."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()

    # -- owner side ---------------------------------------------------------------------------

    async def _own(self, live: _Live, *, task_status: TaskStatus[None]) -> None:
        """Open the session, hand it over, keep it until told to stop or idle too long, close it.

        Before `started()`, failures propagate to the caller of `start()`; after it, they only end
        the session (the callers using it see their own errors).
        """
        started = False
        opening = anyio.CancelScope(deadline=anyio.current_time() + self.settings.start_timeout)
        try:
            with opening:
                # No SDK read timeout: the opening scope bounds the handshake, `_use` every call.
                async with Client(
                    live.connection.transport(),
                    mode="auto",
                    client_info=CLIENT_INFO,
                    cache=None,
                    message_handler=self._message_handler(live),
                ) as client:
                    live.client = client
                    live.touch()
                    opening.deadline = math.inf
                    started = live.connection.started = True
                    task_status.started()
                    await self._hold(live)
                    live.stopping = True  # from here on, callers open a new session instead
                    live.connection.kill = live.kill
            if opening.cancelled_caught and not started:
                raise live.connection.classify(TimeoutError())
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            error = live.connection.classify(exc)
            if not started:
                raise error from exc
            logger.info("session %s ended: %s", live.name, error.message)
        finally:
            live.closed.set()
            if self._live.get(live.name) is live:
                del self._live[live.name]
            self._freed.set()

    async def _hold(self, live: _Live) -> None:
        """Wait until asked to stop, or until the session has been idle for `idle_s`."""
        while not live.stopping:
            live.wake = anyio.Event()
            if live.in_use:
                await live.wake.wait()
                continue
            remaining = live.last_used + self.settings.idle_s - anyio.current_time()
            if remaining <= 0:
                return
            with anyio.move_on_after(remaining):
                await live.wake.wait()

    def _message_handler(self, live: _Live) -> Callable[[IncomingMessage], Awaitable[None]]:
        async def handle(message: IncomingMessage) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                live.tools = None

        return handle

    # -- caller side --------------------------------------------------------------------------

    async def _acquire(self, name: str, connection: Connection) -> _Live:
        spec = connection.spec
        lock = self._opening.setdefault(name, anyio.Lock())
        async with lock:
            live = self._live.get(name)
            if live is not None and (live.stopping or live.spec != spec):
                await self._close(live, kill=False)
                live = None
            if live is None:
                self.backoff.check(name, spec)
                await self._make_room()
                # Born in use: the owner must not see an idle session before its first caller.
                live = _Live(name=name, connection=connection, in_use=1)
                assert self._tg is not None, "Sessions.serve() is not running"
                self._live[name] = live
                try:
                    await self._tg.start(self._own, live)
                except BaseException as exc:
                    self._live.pop(name, None)
                    if isinstance(exc, BridgeError):
                        self.backoff.failed(name, spec, exc)
                    raise
                self.backoff.reset(name)
            else:
                live.in_use += 1
            live.touch()
            return live

    def _release(self, live: _Live) -> None:
        live.in_use -= 1
        live.touch()

    async def _make_room(self) -> None:
        while len(self._live) >= self.settings.max_sessions:
            idle = [live for live in self._live.values() if not live.in_use]
            if idle:
                await self._close(min(idle, key=lambda live: live.last_used), kill=False)
                continue
            self._freed = anyio.Event()
            await self._freed.wait()

    async def _close(self, live: _Live, *, kill: bool) -> None:
        if self._live.get(live.name) is live:
            del self._live[live.name]
        live.request_stop(kill=kill)
        await live.closed.wait()

    async def evict(self, name: str) -> None:
        """Close a server's session now and lift any back-off (its entry changed or was removed)."""
        self.backoff.reset(name)
        live = self._live.get(name)
        if live is not None:
            await self._close(live, kill=False)

    async def _use(
        self, name: str, spec: ServerSpec, request: str, op: Callable[[_Live, Client], Awaitable[T]]
    ) -> T:
        """Run `op` on the server's live session within the timeout; a transport failure retires the
        session. Traced as a `request` span (the caller's tool call span is its parent)."""
        with telemetry.tracer.start_as_current_span(request, kind=SpanKind.CLIENT) as span:
            span.set_attribute(telemetry.SERVER, name)
            return await self._use_traced(name, spec, op, span)

    async def _use_traced(self, name: str, spec: ServerSpec, op: Callable[[_Live, Client], Awaitable[T]], span: Span) -> T:
        live: _Live | None = None
        # Used only if a new session must be opened.
        connection = Connection(name, spec, self.settings, self.support, auth=lambda: self._auth_for(name, spec))
        try:
            with anyio.fail_after(self.settings.start_timeout):
                live = await self._acquire(name, connection)
            span.set_attribute(telemetry.SESSION, "started" if live.connection is connection else "reused")
            try:
                assert live.client is not None
                with anyio.fail_after(self.settings.timeout):
                    return await op(live, live.client)
            finally:
                self._release(live)
        except BridgeError:
            raise
        except Exception as exc:
            if live is None:
                if isinstance(exc, TimeoutError):
                    error = connection.classify(exc)
                    self.backoff.failed(name, spec, error)
                    raise error from exc
                raise
            if isinstance(exc, MCPError) and exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                raise live.connection.classify(exc) from exc  # the server answered: the session is sound
            with anyio.CancelScope(shield=True):
                await self._close(live, kill=True)
            raise live.connection.classify(exc) from exc

    async def _tools(self, live: _Live, client: Client, *, refresh: bool = False) -> dict[str, types.Tool]:
        if live.tools is None or refresh:
            pages, most = self.settings.max_list_pages, self.settings.max_tools
            tools: list[types.Tool] = []
            held = 0
            cursor: str | None = None
            for _ in range(pages):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                held += sum(len(tool.model_dump_json()) for tool in page.tools)
                if len(tools) > most:
                    raise BridgeError(
                        "protocol_error", f"The server listed over {most} tools; the bridge holds at most MCP_MAX_TOOLS={most}."
                    )
                if held > MAX_LISTING_BYTES:
                    raise BridgeError(
                        "protocol_error", f"The server's tool definitions exceed {MAX_LISTING_BYTES >> 20} MiB in all."
                    )
                cursor = page.next_cursor
                if not cursor:
                    break
            else:
                raise BridgeError(
                    "protocol_error",
                    f"The server's tool list did not end after {pages} pages (MCP_MAX_LIST_PAGES); it kept sending nextCursor.",
                )
            live.tools = {tool.name: tool for tool in tools}
        return live.tools

    async def list_tools(self, name: str, spec: ServerSpec) -> list[types.Tool]:
        async def op(live: _Live, client: Client) -> list[types.Tool]:
            return list((await self._tools(live, client)).values())

        return await self._use(name, spec, "tools/list", op)

    async def call_tool(
        self,
        name: str,
        spec: ServerSpec,
        tool_name: str,
        arguments: dict[str, Any],
        admit: Callable[[types.Tool], None] = lambda tool: None,
    ) -> tuple[types.Tool, types.CallToolResult]:
        """Check the cached catalog first: an unknown name gets close matches; `admit` (the caller's
        tool policy) may refuse the tool by raising, and a task-only tool gets a clear refusal; a
        refused call is never sent."""

        async def op(live: _Live, client: Client) -> tuple[types.Tool, types.CallToolResult]:
            tools = await self._tools(live, client)
            if tool_name not in tools:
                tools = await self._tools(live, client, refresh=True)
            tool = tools.get(tool_name)
            if tool is None:
                raise unknown_tool(tool_name, list(tools))
            admit(tool)
            if tool.execution is not None and tool.execution.task_support == "required":
                raise BridgeError(
                    "protocol_error",
                    f"Tool {tool_name!r} can only run as a task (execution.taskSupport=required), which the bridge does not support.",
                )
            trace.get_current_span().set_attribute(telemetry.DOWNSTREAM_TOOL, tool_name)
            return tool, await client.call_tool(tool_name, arguments)

        return await self._use(name, spec, "tools/call", op)

