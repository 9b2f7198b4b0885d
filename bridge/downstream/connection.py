"""One attempt to reach a server, and what its failures mean.

`Connection.transport()` is the one place that branches on the kind of server (`stdio_transport`,
`http_transport`); `Connection.classify` turns whatever the SDK, httpx or the OS raised into one
`BridgeError`, from what the transport saw go wrong.
"""

from __future__ import annotations

import logging
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

import httpx2
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from bridge.downstream.framing import MAX_MESSAGE_BYTES
from bridge.downstream.http import Redirect, http_transport
from bridge.downstream.redaction import redact
from bridge.downstream.stdio import Child, stdio_transport
from bridge.errors import BridgeError
from bridge.internals import TransportStreams
from bridge.models import HttpServerSpec, ServerSpec, StdioServerSpec
from bridge.wording import count
from sandbox import SandboxConfig

logger = logging.getLogger("mcp_bridge.connection")

_MIB = 1024 * 1024


@dataclass(frozen=True)
class SessionSettings:
    timeout: float
    sandbox: SandboxConfig
    workspace: Path
    idle_s: float = 300.0
    max_sessions: int = 16


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
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
        self.children: list[Child] = []
        self.statuses: list[int] = []
        self.requested: set[str] = set()  # every URL an HTTP request went to
        self.redirect: Redirect | None = None  # the latest redirect answer
        # A message over MAX_MESSAGE_BYTES was refused.
        self.oversized = False
        # Set when the session is abandoned (timeout, failure): close without a grace period.
        self.kill = False

    @property
    def child(self) -> Child | None:
        return self.children[0] if self.children else None

    def transport(self) -> AbstractAsyncContextManager[TransportStreams]:
        if isinstance(self.spec, StdioServerSpec):
            return stdio_transport(self, self.spec)
        return http_transport(self, self.spec)

    def classify(self, exc: BaseException) -> BridgeError:
        """Turn whatever the SDK or the OS raised into one `BridgeError` a model can act on.

        Call it after the transport has closed, so a dead child's exit code is known. Header values
        never appear in the result, even when the server quoted them back.
        """
        error = self._classify(leaves(exc))
        secrets = list(self.spec.headers.values()) if isinstance(self.spec, HttpServerSpec) else []
        return redact(error, secrets)

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
                errors = f"{leaf.title}, {count(leaf.error_count(), 'error')}; first: {where}: {first['msg']}"
                return BridgeError("protocol_error", f"The server's answer is not valid MCP ({errors}).")
        first = leaves[0]
        return BridgeError("protocol_error", f"The session failed: {type(first).__name__}: {first}")

    def _not_mcp(self, child: Child) -> BridgeError:
        if child.non_json_lines:
            lines = count(child.non_json_lines, "line")
            what = f"printed text that is not JSON-RPC ({lines}; first: {child.first_non_json!r})"
        else:
            what = f"answered only request ids the bridge never sent ({count(child.stray_responses, 'answer')})"
        return BridgeError(
            "protocol_error",
            f"The server does not speak MCP over stdio: it {what} and never answered a request.",
            non_json_lines=child.non_json_lines,
            stray_responses=child.stray_responses,
        )
