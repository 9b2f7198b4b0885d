"""Warm sessions: a pool of live client sessions on the worker loop, one owner task each.

A client session must be opened and closed by the same task (anyio cancel scopes), so each live
session has an owner task that opens it, waits, and closes it; callers from any task share the
open `Client` concurrently (the SDK multiplexes requests), so a slow call delays nobody.

Rules:
- idle sessions close after `idle_s` (0: one session per call); at most `max_sessions` live, the
  least recently used idle one closed to make room at once (its child ends in its owner task, so
  a new server never waits on an idle one); with every session busy, a new one waits for the
  first release, up to `start_timeout`, then gets a retryable `timeout` that names the setting;
- a session is closed, its children killed, when its registry entry changes or is removed, when a
  call on it times out or fails at the transport level (a hung or dead child is never reused), and
  at shutdown; the next call opens a fresh one, so a dead child costs one error;
- a server's tool list is fetched once per session and refreshed on
  `notifications/tools/list_changed` or when a call names a tool the cache does not know; one
  listing holds at most `max_list_pages` pages and `max_tools` tools (a server whose `nextCursor`
  never ends is a `protocol_error`, not a bridge out of memory: `bridge.downstream.listing`);
- a task-only tool runs as a task (`bridge.downstream.tasks`); a session's state and its client,
  which advertises exactly the host's abilities, are `bridge.downstream.live`;
- opening a session (spawn or connect, then the handshake) is bounded by `start_timeout`, each
  operation on an open one by `timeout`;
- sessions are keyed on the server *and* the calling host's `Abilities` (`bridge.downstream.relay`):
  a session advertises what its host can answer, no more. Without asks or logs a session is
  shared by concurrent calls and spoken in the 2026-07-28 era where the server has it; a session
  whose host can answer asks (elicitation, sampling) or wants logs carries one call at a time,
  since those messages name no request on the wire, and several such sessions may be live for one
  server. Sessions for a host with asks, and every stdio server's (its roots are the bridge's to
  answer, whatever the host declares), try the handshake era first (only there can a server send
  requests of its own), falling back to 2026-07-28 for a server that refuses it;
- while a call runs, what the server sends back goes to that call's `CallRelay`; the deadline
  (`timeout`) stops while the host's person answers an ask;
- a server that keeps failing to start or connect is held back (`bridge.downstream.backoff`): calls get its
  last error at once until the hold passes; eviction (a re-registration) lifts the hold.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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

from bridge import telemetry
from bridge.downstream.backoff import Backoff
from bridge.downstream.connection import Connection, SessionSettings, leaves
from bridge.downstream.listing import Listings, all_tools, listed_resources
from bridge.downstream.live import Live, client_for, set_log_level
from bridge.downstream.relay import Abilities, CallRelay, Clock
from bridge.downstream.sandbox_notes import refused_write_note
from bridge.downstream.stdio import ChildSupport
from bridge.downstream.tasks import TASKS_UNAVAILABLE, call_as_task, runs_tasks, task_only
from bridge.errors import BridgeError, unknown_tool
from bridge.models import ServerSpec

logger = logging.getLogger("mcp_bridge.sessions")

T = TypeVar("T")


@dataclass
class _RoomWait:
    """Whether a call waits for the pool to have room (every session busy), itself or behind the
    caller opening the same server."""

    busy: bool = False
    behind: _RoomWait | None = None

    @property
    def pool_full(self) -> bool:
        return self.busy or (self.behind is not None and self.behind.busy)


def _text(result: types.CallToolResult) -> str:
    """A result's text blocks, where a tool's own error says what failed."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def _refused(exc: BaseException) -> bool:
    """The server answered the handshake with an error (a 2026-07-28-only server does)."""
    return any(isinstance(leaf, MCPError) and leaf.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT) for leaf in leaves(exc))


class Sessions:
    """The pool. `serve()` must run on the worker loop for as long as sessions may be used."""

    def __init__(
        self,
        settings: SessionSettings,
        backoff: Backoff,
        support: ChildSupport | None = None,
        auth_for: Callable[[str, ServerSpec], httpx2.Auth | None] = lambda name, spec: None,
        listings: Listings | None = None,
    ) -> None:
        """`auth_for(name, spec)` signs a new session's HTTP requests in (stored OAuth tokens), or not;
        `listings` hears of every tool list fetched and every change a server announces."""
        self.settings = settings
        self.backoff = backoff
        self.support = support or ChildSupport()
        self._auth_for = auth_for
        self._listings = listings or Listings()
        self._live: dict[str, list[Live]] = {}
        self._tg: TaskGroup | None = None
        self._opening: dict[str, anyio.Lock] = {}
        self._freed = anyio.Event()
        self._room_waiters = 0
        self._openers: dict[str, _RoomWait] = {}  # who holds each server's opening lock
        self._modern_only: set[str] = set()  # servers that refused the handshake

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the task group that owner tasks live in; cancelling it closes every session."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()

    # -- owner side ---------------------------------------------------------------------------

    async def _own(self, live: Live, *, task_status: TaskStatus[None]) -> None:
        """Open the session, hand it over, keep it until told to stop or idle too long, close it.

        Before `started()`, failures propagate to the caller of `start()`; after it, they only end
        the session (the callers using it see their own errors).
        """
        started = False
        opening = anyio.CancelScope(deadline=anyio.current_time() + self.settings.start_timeout)
        handshake_first = live.abilities.handshake_first and live.name not in self._modern_only
        try:
            with opening:
                for mode in ("legacy", "auto") if handshake_first else ("auto",):
                    try:
                        async with client_for(live, mode, self._message_handler(live)) as client:
                            await set_log_level(live, client)
                            live.client = client
                            live.touch()
                            opening.deadline = math.inf
                            started = live.connection.started = True
                            task_status.started()
                            await self._hold(live)
                            live.stopping = True  # from here on, callers open a new session instead
                            live.connection.kill = live.kill
                        break
                    except Exception as exc:
                        if started or mode != "legacy" or not _refused(exc):
                            raise
                        self._modern_only.add(live.name)
                        live.connection = self._connection(live.name, live.spec)  # a fresh child for the retry
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
            lives = self._live.get(live.name, [])
            if live in lives:
                lives.remove(live)
            self._signal_freed()

    async def _hold(self, live: Live) -> None:
        """Wait until asked to stop, or until the session has been idle for `idle_s`.

        A call does not wake the owner (that cost each warm call two task switches): when the idle
        time since the last use it knew of runs out, the owner looks again, and waits on if the
        session was used since, or until the last release if it is in use."""
        while not live.stopping:
            remaining = live.last_used + self.settings.idle_s - anyio.current_time()
            if remaining <= 0 and not live.in_use:
                return
            live.wake = anyio.Event()
            if remaining > 0:
                with anyio.move_on_after(remaining):
                    await live.wake.wait()
            else:  # in use past its idle time: the last release wakes the owner
                live.awaits_release = True
                await live.wake.wait()
                live.awaits_release = False

    def _message_handler(self, live: Live) -> Callable[[IncomingMessage], Awaitable[None]]:
        async def handle(message: IncomingMessage) -> None:
            if isinstance(message, types.ToolListChangedNotification):
                live.tools = None
                await self._listings.changed(live.name)

        return handle

    # -- caller side --------------------------------------------------------------------------

    def _reuse(self, name: str, spec: ServerSpec, abilities: Abilities) -> Live | None:
        """A warm call's session, taken at once: an open one free for the spec and abilities, when
        no session of an older spec is left for `_acquire` to close. None: `_acquire` decides (and
        waits for a session another caller is opening)."""
        lives = self._live.get(name, [])
        if any(live.spec != spec and not live.stopping for live in lives):
            return None
        live = next((live for live in lives if live.client is not None and live.free_for(spec, abilities)), None)
        if live is not None:
            live.in_use += 1
            live.touch()
        return live

    async def _acquire(self, name: str, connection: Connection, abilities: Abilities, waiting: _RoomWait) -> Live:
        spec = connection.spec
        lock = self._opening.get(name)
        if lock is None:  # fast_acquire: taken uncontended (a warm call), it does not yield to the loop
            lock = self._opening[name] = anyio.Lock(fast_acquire=True)
        waiting.behind = self._openers.get(name)  # a caller opening this server, waited for
        async with lock:
            waiting.behind = None
            self._openers[name] = waiting
            try:
                for stale in [live for live in self._live.get(name, []) if live.spec != spec and not live.stopping]:
                    await self._close(stale, kill=False)
                if (reused := self._reuse(name, spec, abilities)) is not None:
                    return reused
                self.backoff.check(name, spec)
                await self._make_room(waiting)
                # Born in use: the owner must not see an idle session before its first caller.
                live = Live(name=name, connection=connection, abilities=abilities, in_use=1)
                assert self._tg is not None, "Sessions.serve() is not running"
                self._live.setdefault(name, []).append(live)
                try:
                    await self._tg.start(self._own, live)
                except BaseException as exc:
                    lives = self._live.get(name, [])
                    if live in lives:
                        lives.remove(live)
                    if isinstance(exc, BridgeError):
                        self.backoff.failed(name, spec, exc)
                    raise
                self.backoff.reset(name)
                live.touch()
                return live
            finally:
                self._openers.pop(name, None)

    def _release(self, live: Live) -> None:
        live.in_use -= 1
        live.touch()
        if live.awaits_release and not live.in_use:
            live.wake.set()
        if self._room_waiters and not live.in_use:
            self._signal_freed()

    def _all(self) -> list[Live]:
        return [live for lives in self._live.values() for live in lives]

    async def _make_room(self, waiting: _RoomWait) -> None:
        """Room for one more session: the least recently used idle one is told to close, and its
        child is left to end in its owner task (a new server never waits on an idle one). With
        every session busy, wait until one is released or ends; `waiting` says so meanwhile."""
        while len(self._all()) >= self.settings.max_sessions:
            idle = [live for live in self._all() if not live.in_use]
            if idle:
                self._retire(min(idle, key=lambda live: live.last_used))
                continue
            waiting.busy = True
            self._room_waiters += 1
            try:
                await self._freed.wait()
            finally:
                self._room_waiters -= 1
        waiting.busy = False

    def _signal_freed(self) -> None:
        """Wake every caller waiting for room (each waits on the event it found)."""
        self._freed.set()
        self._freed = anyio.Event()

    def _retire(self, live: Live, *, kill: bool = False) -> None:
        """Count the session no more and tell its owner to close it."""
        lives = self._live.get(live.name, [])
        if live in lives:
            lives.remove(live)
        live.request_stop(kill=kill)

    async def _close(self, live: Live, *, kill: bool) -> None:
        self._retire(live, kill=kill)
        await live.closed.wait()

    def live(self, name: str) -> bool:
        """Whether a session to the server is open now (asking it again costs no start)."""
        return any(live.client is not None and not live.stopping for live in self._live.get(name, []))

    async def evict(self, name: str) -> None:
        """Close a server's sessions now and lift any back-off (its entry changed or was removed)."""
        self.backoff.reset(name)
        self._modern_only.discard(name)
        for live in list(self._live.get(name, [])):
            await self._close(live, kill=False)

    def _connection(self, name: str, spec: ServerSpec) -> Connection:
        return Connection(name, spec, self.settings, self.support, auth=lambda: self._auth_for(name, spec))

    async def _use(
        self,
        name: str,
        spec: ServerSpec,
        request: str,
        op: Callable[[Live, Client], Awaitable[T]],
        call: CallRelay | None = None,
    ) -> T:
        """Run `op` on a live session for the call's abilities: opening one within `start_timeout`,
        the operation within `timeout` (stopped while a person answers an ask); a transport failure
        retires the session. Traced as a `request` span (the caller's tool call span is its parent)."""
        with telemetry.span(request, SpanKind.CLIENT) as span:
            span.set_attribute(telemetry.SERVER, name)
            return await self._use_traced(name, spec, op, call, span)

    async def _use_traced(
        self, name: str, spec: ServerSpec, op: Callable[[Live, Client], Awaitable[T]], call: CallRelay | None, span: Span
    ) -> T:
        abilities = (call.abilities if call is not None else Abilities()).for_server(spec)
        live = self._reuse(name, spec, abilities)
        connection: Connection | None = None
        waiting = _RoomWait()
        try:
            if live is None:
                connection = self._connection(name, spec)
                with anyio.fail_after(self.settings.start_timeout):
                    live = await self._acquire(name, connection, abilities, waiting)
            span.set_attribute(telemetry.SESSION, "started" if live.connection is connection else "reused")
            deadline = anyio.CancelScope(deadline=anyio.current_time() + self.settings.timeout)
            if call is not None:
                call.clock = Clock(deadline)
                live.calls.append(call)
            try:
                with deadline:
                    assert live.client is not None
                    return await op(live, live.client)
            finally:
                if call is not None:
                    live.calls.remove(call)
                self._release(live)
            raise TimeoutError  # the deadline passed
        except BridgeError:
            raise
        except Exception as exc:
            if live is None:
                if isinstance(exc, TimeoutError) and waiting.pool_full:  # the pool's fault, not the server's
                    raise self._pool_busy() from exc
                if isinstance(exc, TimeoutError) and connection is not None:
                    error = connection.classify(exc)
                    self.backoff.failed(name, spec, error)
                    raise error from exc
                raise
            if isinstance(exc, MCPError) and exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                error = live.connection.classify(exc)
                if error.code != "auth_required":
                    raise error from exc  # the server answered: the session is sound
                # Opened before a sign-in, or signed with tokens no longer good: the next call,
                # after the sign-in, needs a session that carries the new tokens.
                with anyio.CancelScope(shield=True):
                    await self._close(live, kill=False)
                raise error from exc
            with anyio.CancelScope(shield=True):
                await self._close(live, kill=True)
            raise live.connection.classify(exc) from exc

    def _pool_busy(self) -> BridgeError:
        most, waited = self.settings.max_sessions, self.settings.start_timeout
        return BridgeError(
            "timeout",
            f"All {most} downstream sessions (MCP_MAX_SESSIONS) stayed busy for {waited:g} s (MCP_START_TIMEOUT), "
            "so no session could be opened; try again when a call ends, or raise MCP_MAX_SESSIONS.",
        )

    async def _tools(self, live: Live, client: Client, *, refresh: bool = False) -> dict[str, types.Tool]:
        if live.tools is None or refresh:
            tools, ttl_s = await all_tools(client, pages=self.settings.max_list_pages, most=self.settings.max_tools)
            live.tools = {tool.name: tool for tool in tools}
            await self._listings.listed(live.name, tools, ttl_s)
        return live.tools

    async def list_tools(self, name: str, spec: ServerSpec, call: CallRelay | None = None) -> list[types.Tool]:
        """The catalog the calling host would see: on a session with its abilities."""
        return (await self.catalog(name, spec, call))[0]

    async def catalog(
        self, name: str, spec: ServerSpec, call: CallRelay | None = None, *, refresh: bool = False
    ) -> tuple[list[types.Tool], dict[str, str]]:
        """The catalog (`refresh`: fetched anew, not the session's copy), and why each of its tools
        cannot be called here, if one cannot: a task-only tool on a server that runs no tasks the
        bridge can drive."""

        async def op(live: Live, client: Client) -> tuple[list[types.Tool], dict[str, str]]:
            tools = list((await self._tools(live, client, refresh=refresh)).values())
            unrunnable = {} if runs_tasks(client) else {tool.name: TASKS_UNAVAILABLE for tool in tools if task_only(tool)}
            return tools, unrunnable

        return await self._use(name, spec, "tools/list", op, call)

    async def call_tool(
        self,
        name: str,
        spec: ServerSpec,
        tool_name: str,
        arguments: dict[str, Any],
        admit: Callable[[types.Tool], None] = lambda tool: None,
        call: CallRelay | None = None,
    ) -> tuple[types.Tool, types.CallToolResult]:
        """Check the cached catalog first: an unknown name gets close matches; `admit` (the caller's
        tool policy) may refuse the tool by raising; a refused call is never sent. A task-only tool
        runs as a task. What the server sends back meanwhile goes to `call`."""

        async def op(live: Live, client: Client) -> tuple[types.Tool, types.CallToolResult]:
            tools = await self._tools(live, client)
            if tool_name not in tools:
                tools = await self._tools(live, client, refresh=True)
            tool = tools.get(tool_name)
            if tool is None:
                raise unknown_tool(tool_name, list(tools))
            admit(tool)
            relay = call if call is not None else live.relay()
            trace.get_current_span().set_attribute(telemetry.DOWNSTREAM_TOOL, tool_name)
            if task_only(tool):
                result = await call_as_task(client, tool_name, arguments, relay)
            else:
                # Progress names its request (by token), so it reaches the call on a shared session too.
                wants_progress = relay.channel is not None and relay.channel.wants_progress
                result = await client.call_tool(
                    tool_name, arguments, progress_callback=relay.progress if wants_progress else None
                )
            await relay.finish()
            if result.is_error and (note := refused_write_note(live.connection.launch, _text(result))):
                relay.notes.append(note)  # the tool's own error does not say the sandbox refused it
            return tool, result

        return await self._use(name, spec, "tools/call", op, call)

    async def read_resource(
        self, name: str, spec: ServerSpec, uri: str, *, linked: bool
    ) -> list[types.TextResourceContents | types.BlobResourceContents]:
        """Read a resource the server listed, or `linked` in a result; any other URI is refused
        unread, so the bridge never fetches what the server did not offer."""

        async def op(live: Live, client: Client) -> list[types.TextResourceContents | types.BlobResourceContents]:
            if not linked and uri not in await listed_resources(client):
                raise BridgeError(
                    "invalid_argument",
                    f"{name} neither listed nor linked the resource {uri[:200]!r}; read only URIs its resources or results name.",
                )
            return list((await client.read_resource(uri)).contents)

        return await self._use(name, spec, "resources/read", op)
