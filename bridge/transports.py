"""The two ways of reaching a downstream server, and what their failures mean.

One transport per kind of server (`http_transport`, `stdio_transport`), chosen by the spec in
`Connection`; nothing above this module branches on transport. `Connection.classify` turns whatever
the SDK, httpx or the OS raised into one `BridgeError`.

The stdio transport spawns the child itself instead of using the SDK's `stdio_client`, because the
bridge must know what the SDK keeps private: the child's exit code and the last lines of its stderr
(for `child_exited`), a cap on one stdout message (a flood cannot exhaust memory), and an immediate
kill of the whole process group when a call is cancelled or times out.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from bridge.models import BridgeError, HttpServerSpec, ServerSpec, StdioServerSpec
from sandbox import SandboxConfig, SandboxUnavailable, prepare_launch

logger = logging.getLogger("mcp_bridge.transports")

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
STDERR_TAIL_BYTES = 4096
STDERR_TAIL_LINES = 10
CLOSE_GRACE_S = 2.0
TERM_GRACE_S = 1.0
_POLL_S = 0.01


@dataclass(frozen=True)
class SessionSettings:
    timeout: float
    sandbox: SandboxConfig
    workspace: Path
    idle_s: float = 300.0
    max_sessions: int = 16


@dataclass
class _Child:
    """One spawned stdio child: its process (group leader), stderr tail and what it did wrong."""

    process: Process
    command: str
    _tail: bytearray = field(default_factory=bytearray)
    oversized: bool = False
    non_json_lines: int = 0

    def feed_stderr(self, chunk: bytes) -> None:
        self._tail += chunk
        del self._tail[:-STDERR_TAIL_BYTES]

    def stderr_tail(self) -> list[str]:
        lines = self._tail.decode("utf-8", errors="replace").splitlines()
        return [line[-300:] for line in lines if line.strip()][-STDERR_TAIL_LINES:]

    def signal_group(self, signum: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

    async def wait_exit(self, seconds: float) -> bool:
        """Poll, not `process.wait()`: a grandchild holding the pipes would make that hang."""
        with anyio.move_on_after(seconds):
            while self.process.returncode is None:
                await anyio.sleep(_POLL_S)
        return self.process.returncode is not None

    async def stop(self, *, graceful: bool) -> None:
        """Close stdin and give the child a grace period, or not; then kill the whole group."""
        if graceful:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self.process.stdin.aclose()  # type: ignore[union-attr]
            if not await self.wait_exit(CLOSE_GRACE_S):
                self.signal_group(signal.SIGTERM)
                await self.wait_exit(TERM_GRACE_S)
        # Always: the leader may be gone while grandchildren it started still run in its group.
        self.signal_group(signal.SIGKILL)
        if not await self.wait_exit(CLOSE_GRACE_S):
            logger.warning("child %d survived SIGKILL", self.process.pid)
        with anyio.move_on_after(CLOSE_GRACE_S):
            await self.process.aclose()  # release the pipes and the loop's subprocess transport


def _parse_line(line: bytes) -> SessionMessage | None:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        return None


@asynccontextmanager
async def _stdio_transport(connection: Connection, spec: StdioServerSpec) -> AsyncIterator[TransportStreams]:
    settings = connection.settings
    try:
        launch = prepare_launch(
            spec.command,
            list(spec.args),
            cwd=Path(spec.cwd) if spec.cwd else settings.workspace,
            server_env=dict(spec.env),
            network=spec.network,
            write_paths=spec.write_paths,
            config=settings.sandbox,
        )
    except SandboxUnavailable as exc:
        raise BridgeError("spawn_failed", f"Cannot start a sandboxed stdio server: {exc}") from None
    try:
        process = await anyio.open_process(
            [launch.command, *launch.args], env=launch.env, cwd=launch.cwd, start_new_session=True
        )
    except OSError as exc:
        raise BridgeError("spawn_failed", f"Cannot start {spec.command}: {exc.strerror or exc}", command=spec.command) from None
    child = _Child(process=process, command=spec.command)
    connection.children.append(child)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def pump_stdout() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with read_send:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                async for chunk in process.stdout:
                    buffer += chunk
                    while (end := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        if not line.strip():
                            continue
                        message = _parse_line(line)
                        if message is None:
                            child.non_json_lines += 1
                            continue
                        await read_send.send(message)
                    if len(buffer) > MAX_MESSAGE_BYTES:
                        child.oversized = True
                        return  # closing the stream ends the session: the caller sees the cause

    async def pump_stdin() -> None:
        assert process.stdin is not None
        async with write_recv:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))

    async def pump_stderr() -> None:
        assert process.stderr is not None
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            async for chunk in process.stderr:
                child.feed_stderr(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_stdout)
        tg.start_soon(pump_stdin)
        tg.start_soon(pump_stderr)
        graceful = False
        try:
            yield read_recv, write_send
            graceful = not connection.kill
        finally:
            with anyio.CancelScope(shield=True):
                await child.stop(graceful=graceful)
                for path in launch.cleanup_paths:
                    shutil.rmtree(path, ignore_errors=True)
            tg.cancel_scope.cancel()


@asynccontextmanager
async def _http_transport(spec: HttpServerSpec, settings: SessionSettings, statuses: list[int]) -> AsyncIterator[TransportStreams]:
    client = create_mcp_http_client(headers=dict(spec.headers), timeout=httpx2.Timeout(settings.timeout))

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    client.event_hooks["response"] = [record]
    async with client, streamable_http_client(spec.url, http_client=client) as streams:
        yield streams


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _http_hint(status: int) -> str:
    return {
        401: " (unauthorized: check the headers, e.g. Authorization)",
        403: " (forbidden: the credentials lack access)",
        404: " (not found: check the URL path, often /mcp)",
    }.get(status, "")


class Connection:
    """One attempt to reach a server: the transport for its spec, and what it saw go wrong."""

    def __init__(self, spec: ServerSpec, settings: SessionSettings) -> None:
        self.spec = spec
        self.settings = settings
        self.children: list[_Child] = []
        self.statuses: list[int] = []
        # Set when the session is abandoned (timeout, failure): close without a grace period.
        self.kill = False

    @property
    def child(self) -> _Child | None:
        return self.children[0] if self.children else None

    def transport(self) -> AbstractAsyncContextManager[TransportStreams]:
        if isinstance(self.spec, StdioServerSpec):
            return _stdio_transport(self, self.spec)
        return _http_transport(self.spec, self.settings, self.statuses)

    def classify(self, exc: BaseException) -> BridgeError:
        """Turn whatever the SDK or the OS raised into one `BridgeError` a model can act on.

        Call it after the transport has closed, so a dead child's exit code is known.
        """
        child, statuses = self.child, self.statuses
        leaves = _leaves(exc)
        for leaf in leaves:
            if isinstance(leaf, BridgeError):
                return leaf
        if child is not None:
            code = child.process.returncode
            if child.oversized:
                return BridgeError(
                    "protocol_error", f"The server sent a message over {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB; it was stopped."
                )
            if code is not None and not any(isinstance(leaf, TimeoutError) for leaf in leaves):
                tail = child.stderr_tail()
                last = f" Last stderr: {tail[-1]}" if tail else ""
                return BridgeError(
                    "child_exited", f"The server process exited with code {code}.{last}", exit_code=code, stderr_tail=tail
                )
        for leaf in leaves:
            if isinstance(leaf, TimeoutError):
                return BridgeError("timeout", "The server did not answer in time; it was stopped.")
        bad = [status for status in statuses if status >= 400]
        if bad:
            status = bad[-1]
            if status >= 500:
                return BridgeError("connect_failed", f"The server answered HTTP {status}.", status=status)
            return BridgeError("http_error", f"The server answered HTTP {status}{_http_hint(status)}.", status=status)
        for leaf in leaves:
            if isinstance(leaf, httpx2.TransportError):
                return BridgeError("connect_failed", f"Cannot connect to the server: {type(leaf).__name__}: {leaf}")
        for leaf in leaves:
            if isinstance(leaf, MCPError):
                if child is not None and child.non_json_lines:
                    return BridgeError(
                        "protocol_error", f"The server does not speak MCP over stdout ({leaf.message}).", non_json_lines=child.non_json_lines
                    )
                return BridgeError("protocol_error", f"MCP error from the server: {leaf.message}", mcp_code=leaf.code)
        first = leaves[0]
        return BridgeError("protocol_error", f"The session failed: {type(first).__name__}: {first}")
