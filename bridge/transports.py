"""The two ways of reaching a downstream server, and what their failures mean.

One transport per kind of server (`_http_transport`, `_stdio_transport`), chosen by the spec in
`Connection`; nothing above this module branches on transport. `Connection.classify` turns whatever
the SDK, httpx or the OS raised into one `BridgeError`, from what the transport saw go wrong.

The stdio transport spawns the child itself instead of using the SDK's `stdio_client`, because the
bridge must know what the SDK keeps private: the child's exit code and the last lines of its stderr
(for `child_exited`), a cap on one stdout message (a flood cannot exhaust memory), whether the child
ever answered a request (a program that is not an MCP server is a `protocol_error`, not a
`timeout`), and an immediate kill of the whole process group when a call is cancelled or times out.

Both transports hold one message to `MAX_MESSAGE_BYTES`: a stdout line, an HTTP JSON body, an SSE
event. HTTP bodies are never decompressed (the bridge asks for `identity`), so the bytes read are
the memory used.
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
from urllib.parse import quote

import anyio
import httpx2
import mcp_types as types
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from bridge.models import BridgeError, HttpServerSpec, ServerSpec, StdioServerSpec
from sandbox import CommandNotFound, SandboxConfig, SandboxUnavailable, prepare_launch

logger = logging.getLogger("mcp_bridge.transports")

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
STDERR_TAIL_BYTES = 4096
STDERR_TAIL_LINES = 10
CLOSE_GRACE_S = 2.0
TERM_GRACE_S = 1.0
_POLL_S = 0.01
_MIB = 1024 * 1024


@dataclass(frozen=True)
class SessionSettings:
    timeout: float
    sandbox: SandboxConfig
    workspace: Path
    idle_s: float = 300.0
    max_sessions: int = 16


@dataclass
class _Child:
    """One spawned stdio child: its process (group leader), stderr tail, and what it said on stdout."""

    process: Process
    command: str
    _tail: bytearray = field(default_factory=bytearray)
    stopped: bool = False  # the bridge signalled it while it still ran
    answers: int = 0  # responses to requests the bridge sent
    non_json_lines: int = 0  # stdout lines that are not JSON-RPC
    first_non_json: str = ""
    stray_responses: int = 0  # responses to ids the bridge never sent

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
        code = self.process.returncode
        if code is None or (self.stopped and code < 0):
            return None
        return code

    @property
    def never_spoke_mcp(self) -> bool:
        """It wrote to stdout, but never one answer to a request the bridge sent."""
        return not self.answers and bool(self.non_json_lines or self.stray_responses)

    def signal_group(self, signum: int) -> None:
        if self.process.returncode is None:
            self.stopped = True
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
    except CommandNotFound as exc:
        raise BridgeError("spawn_failed", f"Cannot start the stdio server: {exc}", command=spec.command) from None
    try:
        process = await anyio.open_process(
            [launch.command, *launch.args], env=launch.env, cwd=launch.cwd, start_new_session=True
        )
    except OSError as exc:
        raise BridgeError("spawn_failed", f"Cannot start {spec.command}: {exc.strerror or exc}", command=spec.command) from None
    child = _Child(process=process, command=spec.command)
    connection.children.append(child)
    sent: set[types.RequestId] = set()  # ids of requests awaiting the child's answer
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def pump_stdout() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with read_send:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                async for chunk in process.stdout:
                    start = len(buffer)  # only the new bytes can hold the next newline
                    buffer += chunk
                    while (end := buffer.find(b"\n", start)) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        start = 0
                        if not line.strip():
                            continue
                        message = _parse_line(line)
                        if message is None:
                            child.note_non_json(line)
                            continue
                        if isinstance(message.message, types.JSONRPCResponse | types.JSONRPCError):
                            if message.message.id in sent:
                                sent.discard(message.message.id)
                                child.answers += 1
                            else:
                                child.stray_responses += 1
                        await read_send.send(message)
                    if len(buffer) > MAX_MESSAGE_BYTES:
                        connection.oversized = True
                        return  # closing the stream ends the session: the caller sees the cause

    async def pump_stdin() -> None:
        assert process.stdin is not None
        async with write_recv:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_recv:
                    if isinstance(message.message, types.JSONRPCRequest):
                        sent.add(message.message.id)
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


@dataclass(frozen=True)
class _Redirect:
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
async def _http_transport(connection: Connection, spec: HttpServerSpec) -> AsyncIterator[TransportStreams]:
    async def watch(response: httpx2.Response) -> None:
        """Record what came back; never decode, and cap every body but an event stream (the SDK caps each event)."""
        connection.statuses.append(response.status_code)
        sent_to = response.request.url.copy_with(fragment=None)
        connection.requested.add(str(sent_to))
        if response.has_redirect_location:
            target = sent_to.join(response.headers["location"]).copy_with(fragment=None)
            connection.redirect = _Redirect(
                status=response.status_code,
                target=str(target.copy_with(userinfo=b"", query=None)),  # query and userinfo may hold secrets
                loop=str(target) in connection.requested,
            )
        response.headers.pop("content-encoding", None)
        if not response.headers.get("content-type", "").lower().startswith("text/event-stream"):
            response.stream = _CappedBody(response.stream, connection)

    headers = {name: value for name, value in spec.headers.items() if name.lower() != "accept-encoding"}
    headers["Accept-Encoding"] = "identity"
    client = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(connection.settings.timeout))
    client.event_hooks["response"] = [watch]
    transport = streamable_http_client(spec.url, http_client=client, max_sse_event_size=MAX_MESSAGE_BYTES)
    async with client, transport as streams:
        yield streams


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _http_hint(status: int) -> str:
    return {
        401: " (unauthorized: check the headers, e.g. Authorization)",
        403: " (forbidden: the credentials lack access)",
        404: " (not found: check the URL path, often /mcp)",
    }.get(status, "")


def _clean(error: BridgeError, secrets: list[str]) -> BridgeError:
    """`error` on one line, without any of `secrets` (header values, each word of them, also URL-quoted),
    which a careless server may quote back in an error of its own."""
    words = {word for value in secrets for word in (value, *value.split()) if len(word) >= 4}
    forms = {form for word in words for form in (word, quote(word), quote(word, safe=""))}
    forms_longest_first = sorted(forms, key=len, reverse=True)

    def clean(text: str) -> str:
        for form in forms_longest_first:
            text = text.replace(form, "[redacted]")
        return " ".join(text.split())

    detail = {key: clean(value) if isinstance(value, str) else value for key, value in error.detail.items()}
    return BridgeError(error.code, clean(error.message), retryable=error.retryable, **detail)


class Connection:
    """One attempt to reach a server: the transport for its spec, and what it saw go wrong."""

    def __init__(self, spec: ServerSpec, settings: SessionSettings) -> None:
        self.spec = spec
        self.settings = settings
        self.children: list[_Child] = []
        self.statuses: list[int] = []
        self.requested: set[str] = set()  # every URL an HTTP request went to
        self.redirect: _Redirect | None = None  # the latest redirect answer
        # A message over MAX_MESSAGE_BYTES was refused.
        self.oversized = False
        # Set when the session is abandoned (timeout, failure): close without a grace period.
        self.kill = False

    @property
    def child(self) -> _Child | None:
        return self.children[0] if self.children else None

    def transport(self) -> AbstractAsyncContextManager[TransportStreams]:
        if isinstance(self.spec, StdioServerSpec):
            return _stdio_transport(self, self.spec)
        return _http_transport(self, self.spec)

    def classify(self, exc: BaseException) -> BridgeError:
        """Turn whatever the SDK or the OS raised into one `BridgeError` a model can act on.

        Call it after the transport has closed, so a dead child's exit code is known. Header values
        never appear in the result, even when the server quoted them back.
        """
        error = self._classify(_leaves(exc))
        secrets = list(self.spec.headers.values()) if isinstance(self.spec, HttpServerSpec) else []
        return _clean(error, secrets)

    def _classify(self, leaves: list[BaseException]) -> BridgeError:
        child, statuses = self.child, self.statuses
        for leaf in leaves:
            if isinstance(leaf, BridgeError):
                return leaf
        if self.oversized:
            too_large = f"The server sent a message over {MAX_MESSAGE_BYTES // _MIB} MiB; the session was closed."
            return BridgeError("protocol_error", too_large)
        if child is not None and (code := child.exit_code) is not None:
            tail = child.stderr_tail()
            last = f" Last stderr: {tail[-1]}" if tail else ""
            return BridgeError(
                "child_exited", f"The server process exited with code {code}.{last}", exit_code=code, stderr_tail=tail
            )
        if any(isinstance(leaf, TimeoutError | httpx2.TimeoutException) for leaf in leaves):
            if child is not None and child.never_spoke_mcp:
                return self._not_mcp(child)
            stopped = "; it was stopped" if child is not None else ""
            return BridgeError("timeout", f"The server did not answer within {self.settings.timeout:g} s{stopped}.")
        if statuses and 300 <= statuses[-1] < 400 and self.redirect is not None:
            return self.redirect.error()
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
                if child is not None and child.never_spoke_mcp:
                    return self._not_mcp(child)
                return BridgeError("protocol_error", f"MCP error from the server: {leaf.message}", mcp_code=leaf.code)
        for leaf in leaves:
            if isinstance(leaf, ValidationError):
                first = leaf.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                errors = f"{leaf.title}, {_count(leaf.error_count(), 'error')}; first: {where}: {first['msg']}"
                return BridgeError("protocol_error", f"The server's answer is not valid MCP ({errors}).")
        first = leaves[0]
        return BridgeError("protocol_error", f"The session failed: {type(first).__name__}: {first}")

    def _not_mcp(self, child: _Child) -> BridgeError:
        if child.non_json_lines:
            lines = _count(child.non_json_lines, "line")
            what = f"printed text that is not JSON-RPC ({lines}; first: {child.first_non_json!r})"
        else:
            what = f"answered only request ids the bridge never sent ({_count(child.stray_responses, 'answer')})"
        return BridgeError(
            "protocol_error",
            f"The server does not speak MCP over stdio: it {what} and never answered a request.",
            non_json_lines=child.non_json_lines,
            stray_responses=child.stray_responses,
        )
