"""The stdio transport: one sandboxed child, spawned and framed by the bridge itself.

The bridge spawns the child instead of using the SDK's `stdio_client`, because it must know what
the SDK keeps private: the child's exit code and the last lines of its stderr (for
`child_exited`), a cap on one stdout message (a flood cannot exhaust memory), whether the child
ever answered a request (a program that is not an MCP server is a `protocol_error`, not a
`timeout`), and an immediate kill of the whole process group when a call is cancelled or times out.

A child that prints only text that is not JSON-RPC is no MCP server: once it has done so for
`NOT_MCP_AFTER_S` without a single JSON-RPC message, or as soon as its stdout ends, the session is
closed and the caller gets that text quoted, instead of waiting for the start timeout.

The launch comes from `sandbox.prepare_launch`; `finish_launch` always follows the child's end
(placeholders, cgroup, temp dirs), and a `.git` the child created under a writable root, which
mounts cannot prevent, is logged and handed to `ChildSupport.on_new_repositories`.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Self

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from bridge.downstream.framing import (
    MAX_MESSAGE_BYTES,
    LineFramer,
    LineTooLong,
    PipeReader,
    PipeWriter,
    ReadEnd,
    encode,
)
from bridge.errors import BridgeError
from bridge.internals import TransportStreams
from bridge.models import StdioServerSpec
from sandbox import (
    CommandNotFound,
    FilteringProxy,
    Gate,
    GateFailed,
    Launch,
    Plan,
    SandboxConfig,
    SandboxUnavailable,
    finish_launch,
    new_repositories,
    plan_launch,
    prepare_launch,
)

if TYPE_CHECKING:
    from bridge.downstream.connection import Connection

logger = logging.getLogger("mcp_bridge.stdio")

STDERR_TAIL_BYTES = 4096
STDERR_TAIL_LINES = 10
CLOSE_GRACE_S = 2.0
TERM_GRACE_S = 1.0
NOT_MCP_AFTER_S = 2.0
_POLL_S = 0.01


@dataclass(frozen=True)
class ChildSupport:
    """What stdio children need from the bridge besides settings.

    `proxy`: the filtering proxy a registry-only or host-list child reaches the network through.
    `home_key`: the private home's key for a server name (its registry layer decides).
    `on_new_repositories`: told of the `.git` entries a child created during its session.
    """

    proxy: FilteringProxy | None = None
    home_key: Callable[[str], str] = lambda name: name
    on_new_repositories: Callable[[str, tuple[Path, ...]], None] = lambda name, paths: None


@dataclass
class Child:
    """One spawned stdio child: its process (group leader), stderr tail, and what it said on stdout.

    Its exit is seen by polling (`poll()` reaps it): no watcher thread or loop transport per child.
    """

    process: subprocess.Popen[bytes]
    stdin: PipeWriter  # its stdin, stdout and stderr, written and read by the bridge itself
    stdout: PipeReader
    stderr: PipeReader
    command: str
    _tail: bytearray = field(default_factory=bytearray)
    stopped: bool = False  # the bridge signalled it while it still ran
    answers: int = 0  # responses to requests the bridge sent
    non_json_lines: int = 0  # stdout lines that are not JSON-RPC
    first_non_json: str = ""
    stray_responses: int = 0  # responses to ids the bridge never sent
    json_messages: int = 0  # JSON-RPC messages of any kind it wrote

    def feed_stderr(self, chunk: bytes) -> None:
        self._tail += chunk
        del self._tail[:-STDERR_TAIL_BYTES]

    def stderr_tail(self) -> list[str]:
        lines = self._tail.decode("utf-8", errors="replace").splitlines()
        return [line[-300:] for line in lines if line.strip()][-STDERR_TAIL_LINES:]

    def note_non_json(self, line: bytes) -> None:
        self.non_json_lines += 1
        if not self.first_non_json:
            self.first_non_json = line[:200].decode("utf-8", errors="replace").strip()

    @property
    def exit_code(self) -> int | None:
        """The code the child exited with by itself; None while it runs, or when the bridge's signal ended it."""
        code = self.process.poll()
        if code is None or (self.stopped and code < 0):
            return None
        return code

    @property
    def never_spoke_mcp(self) -> bool:
        """It wrote to stdout, but never one answer to a request the bridge sent."""
        return not self.answers and bool(self.non_json_lines or self.stray_responses)

    def signal_group(self, signum: int) -> None:
        # Judged before the signal, so a death the bridge did not cause (the OOM killer's, say) is
        # never taken for one it did.
        if self.process.poll() is None:
            self.stopped = True
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

    async def wait_exit(self, seconds: float) -> bool:
        return await _exited(self.process, seconds)

    async def stop(self, *, graceful: bool) -> None:
        """Close stdin and give the child a grace period, or not; then kill the whole group."""
        if graceful:
            self.stdin.close()
            if not await self.wait_exit(CLOSE_GRACE_S):
                self.signal_group(signal.SIGTERM)
                await self.wait_exit(TERM_GRACE_S)
        # Always: the leader may be gone while grandchildren it started still run in its group.
        self.signal_group(signal.SIGKILL)
        if not await self.wait_exit(CLOSE_GRACE_S):
            logger.warning("child %d survived SIGKILL", self.process.pid)
        self.stdin.close()
        self.stdout.close()
        self.stderr.close()


async def _exited(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether it exits within `seconds` (reaped). Polled, not `wait()`: that would block the loop."""
    with anyio.move_on_after(seconds):
        while process.poll() is None:
            await anyio.sleep(_POLL_S)
    return process.poll() is not None


def _undo(launch: Launch) -> tuple[Path, ...]:
    try:
        return new_repositories(launch)
    finally:
        finish_launch(launch)


def _parse_line(line: bytes) -> SessionMessage | None:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        return None


def _launch_arguments(spec: StdioServerSpec, sandbox: SandboxConfig, workspace: Path, home_key: str) -> dict[str, object]:
    """What `prepare_launch` and `plan_launch` are given for one server: the same, always."""
    return {
        "cwd": Path(spec.cwd) if spec.cwd else workspace,
        "server_env": dict(spec.env),
        "network": spec.network,
        "write_paths": spec.write_paths,
        "config": sandbox,
        "server_name": home_key,
        "read_paths": spec.read_paths,
        "git_write_paths": spec.git_write_paths,
    }


def plan_child(spec: StdioServerSpec, sandbox: SandboxConfig, workspace: Path, home_key: str) -> Plan:
    """The launch a spawn would make, creating nothing (add time, `servers show`); raises as a spawn would."""
    return plan_launch(spec.command, list(spec.args), **_launch_arguments(spec, sandbox, workspace, home_key))  # type: ignore[arg-type]


def launch_refusal(exc: SandboxUnavailable | CommandNotFound, command: str) -> BridgeError:
    """Why a launch was refused before any spawn: `spawn_failed`, never retryable (nothing changes by retrying)."""
    if isinstance(exc, SandboxUnavailable):
        return BridgeError("spawn_failed", f"Cannot start a sandboxed stdio server: {exc}")
    return BridgeError("spawn_failed", f"Cannot start the stdio server: {exc}", command=command)


@asynccontextmanager
async def stdio_transport(connection: Connection, spec: StdioServerSpec) -> AsyncIterator[TransportStreams]:
    settings, support = connection.settings, connection.support
    home_key = support.home_key(connection.name)
    arguments = _launch_arguments(spec, settings.sandbox, settings.workspace, home_key)
    # In a thread, as its undoing is: it makes the home, the placeholders and their ledger. Shielded:
    # a launch made must reach the `try` below, whose every way out undoes it.
    try:
        with anyio.CancelScope(shield=True):
            launch = await anyio.to_thread.run_sync(
                functools.partial(prepare_launch, spec.command, list(spec.args), **arguments)  # type: ignore[arg-type]
            )
    except (SandboxUnavailable, CommandNotFound) as exc:
        raise launch_refusal(exc, spec.command) from None
    except OSError as exc:  # the disk or the fd table refused: the home, a placeholder, the gate's pipes
        message = f"Cannot prepare the sandbox for {spec.command}: {exc.strerror or exc}"
        raise BridgeError("spawn_failed", message, command=spec.command) from None
    connection.launch = launch
    try:
        if launch.proxy is not None:
            if support.proxy is None:
                raise BridgeError("spawn_failed", "This server's network goes through the bridge's proxy, which is not running.")
            await support.proxy.listen(launch.proxy)
        process, (stdin_fd, stdout_fd, stderr_fd) = _spawn(launch)
        if launch.gate is not None:
            await _release(launch.gate, process, (stdin_fd, stdout_fd, stderr_fd), spec.command)
    except OSError as exc:
        await _finish(connection, launch)
        raise BridgeError("spawn_failed", f"Cannot start {spec.command}: {exc.strerror or exc}", command=spec.command) from None
    except BaseException:
        await _finish(connection, launch)
        raise
    child = Child(
        process=process, stdin=PipeWriter(stdin_fd), stdout=PipeReader(stdout_fd), stderr=PipeReader(stderr_fd),
        command=spec.command,
    )  # fmt: skip
    connection.children.append(child)
    sent: set[types.RequestId] = set()  # ids of requests awaiting the child's answer

    async def give_up_on_text() -> None:
        """Text and nothing else for a while: not an MCP server (ends the session, see `not_mcp`)."""
        await anyio.sleep(NOT_MCP_AFTER_S)
        if not child.json_messages:
            connection.not_mcp = True
            messages.end()

    messages = ChildMessages(child, connection, sent, on_first_text=lambda: tg.start_soon(give_up_on_text))
    requests = ChildRequests(child, sent)

    async def pump_stderr() -> None:
        with suppress(anyio.ClosedResourceError, OSError):
            async for chunk in child.stderr:
                child.feed_stderr(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_stderr)
        graceful = False
        try:
            yield messages, requests
            graceful = not connection.kill
        finally:
            with anyio.CancelScope(shield=True):
                await child.stop(graceful=graceful)
                await _finish(connection, launch)
            tg.cancel_scope.cancel()


class ChildMessages(ReadEnd):
    """The child's stdout as the session's read stream: each line is framed and parsed where the
    session asks for its next message.

    No task and no memory stream stand between the pipe and the session: the relay tasks of stdin
    and stdout cost each message one more task switch and two checkpoints (about 0.07 ms of the
    bridge's ~1.2 ms of CPU a warm call). What the
    relay did is done here: the cap on one message (`oversized`), the count of JSON-RPC messages
    and of answers, and text that is not JSON-RPC noted (the first starts `on_first_text`'s clock).
    `end()` ends the stream, waking a read that waits for the child.
    """

    def __init__(
        self, child: Child, connection: Connection, sent: set[types.RequestId], on_first_text: Callable[[], None]
    ) -> None:
        self._child = child
        self._connection = connection
        self._sent = sent
        self._on_first_text = on_first_text
        self._framer = LineFramer(MAX_MESSAGE_BYTES)
        self._ready: deque[SessionMessage] = deque()
        self._ended = False
        self._reading: anyio.CancelScope | None = None

    def end(self) -> None:
        self._ended = True
        if self._reading is not None:
            self._reading.cancel()

    async def receive(self) -> SessionMessage:
        while not self._ready:
            if self._ended:
                raise anyio.EndOfStream
            chunk: bytes | None = None
            with anyio.CancelScope() as self._reading:  # cancelled by `end()`
                chunk = await self._next_chunk()
            self._reading = None
            if chunk is None:
                self._at_end()
            elif not self._ended:
                self._take(chunk)
        return self._ready.popleft()

    async def _next_chunk(self) -> bytes | None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError, StopAsyncIteration):
            return await anext(self._child.stdout)
        return None

    def _take(self, chunk: bytes) -> None:
        child = self._child
        try:
            lines = self._framer.feed(chunk)
        except LineTooLong:
            self._connection.oversized = True  # ending the stream ends the session: the caller sees the cause
            self._ended = True
            return
        for line in lines:
            if not line.strip():
                continue
            message = _parse_line(line)
            if message is None:
                if not child.non_json_lines and not child.json_messages:
                    self._on_first_text()
                child.note_non_json(line)
                continue
            child.json_messages += 1
            if isinstance(message.message, types.JSONRPCResponse | types.JSONRPCError):
                if message.message.id in self._sent:
                    self._sent.discard(message.message.id)
                    child.answers += 1
                else:
                    child.stray_responses += 1
            self._ready.append(message)

    def _at_end(self) -> None:
        child = self._child
        self._ended = True
        if (rest := self._framer.rest()).strip() and _parse_line(rest) is None:
            child.note_non_json(rest)  # a last line without its newline
        if not child.json_messages and child.non_json_lines:
            self._connection.not_mcp = True  # stdout ended (the child exited) having said only text

    async def aclose(self) -> None:
        self.end()


class ChildRequests:
    """The session's write stream: each message written to the child's stdin by the sender itself
    (no relay task), the ids of its requests noted for `ChildMessages`. A child that closed its
    stdin fails the send as a closed memory stream would, which the SDK reports as the connection
    closed."""

    def __init__(self, child: Child, sent: set[types.RequestId]) -> None:
        self._child = child
        self._sent = sent

    async def send(self, message: SessionMessage) -> None:
        if isinstance(message.message, types.JSONRPCRequest):
            self._sent.add(message.message.id)
        try:
            await self._child.stdin.send(encode(message))
        except OSError as exc:  # the child closed its stdin, or exited
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        """The session is done writing; the child's stdin is closed when it is stopped."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _spawn(launch: Launch) -> tuple[subprocess.Popen[bytes], tuple[int, int, int]]:
    """Start the launch's command, and the bridge's ends of its stdin, stdout and stderr.

    By `subprocess.Popen`, not the event loop's subprocess machinery: no watcher thread or transport
    per child, and `close_fds` holds whatever the loop is (uvloop's spawn, for one, leaves every
    inheritable descriptor open), so only `pass_fds` reach a sandboxed child."""
    ends: list[tuple[int, int]] = []  # (the child's end, the bridge's end) of stdin, stdout, stderr
    try:
        for child_reads in (True, False, False):
            read_end, write_end = os.pipe()
            ends.append((read_end, write_end) if child_reads else (write_end, read_end))
        process = subprocess.Popen(
            [launch.command, *launch.args], stdin=ends[0][0], stdout=ends[1][0], stderr=ends[2][0], env=launch.env,
            cwd=launch.cwd, start_new_session=True, pass_fds=launch.pass_fds,
        )  # fmt: skip
    except BaseException:
        for _, ours in ends:
            os.close(ours)
        raise
    finally:
        for theirs, _ in ends:
            os.close(theirs)
    return process, (ends[0][1], ends[1][1], ends[2][1])


async def _release(gate: Gate, process: subprocess.Popen[bytes], pipes: tuple[int, ...], command: str) -> None:
    """Bound the held child and let it run (in a thread: a root bridge's cgroup join waits ~10 ms,
    while bwrap sets up). Shielded: a held child is always either let go or killed."""
    try:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(gate.release, process.pid)
    except BaseException as exc:
        for fd in pipes:
            os.close(fd)
        process.kill()  # already dead when the gate failed; not when the gate itself broke
        with anyio.CancelScope(shield=True):
            await _exited(process, CLOSE_GRACE_S)
        if isinstance(exc, GateFailed):
            raise BridgeError("spawn_failed", f"Cannot start {command} in the sandbox: {exc.strerror}", command=command) from None
        raise


async def _finish(connection: Connection, launch: Launch) -> None:
    """Undo what the launch left on disk, and report any `.git` the child created (never prevented).

    In a thread: the git scan, the placeholders' removal and a cgroup's (which may wait for its
    last processes) must not hold up the loop serving the host."""
    with anyio.CancelScope(shield=True):
        created = await anyio.to_thread.run_sync(_undo, launch)
    if created:
        logger.warning(
            "stdio server %s created git repositories the host may trust: %s (review them before running git there)",
            connection.name, ", ".join(map(str, created)),
        )  # fmt: skip
        connection.support.on_new_repositories(connection.name, created)
