"""One attempt to reach a server, and what its failures mean.

`Connection.transport()` is the one place that picks a transport by the kind of server (`stdio_transport`,
`http_transport`); `Connection.classify` turns whatever the SDK, httpx or the OS raised into one
`BridgeError`, from what the transport saw go wrong.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.shared.exceptions import MCPError
from mcp_types import PARSE_ERROR
from pydantic import ValidationError

from bridge.downstream.framing import MAX_MESSAGE_BYTES
from bridge.downstream.http import Redirect, http_transport
from bridge.downstream.pinning import Resolver, system_resolver
from bridge.downstream.redaction import redact
from bridge.downstream.sandbox_notes import sandbox_note
from bridge.downstream.stdio import (
    NOT_MCP_AFTER_S,
    Child,
    ChildSupport,
    stdio_transport,
)
from bridge.errors import BridgeError
from bridge.internals import TransportStreams
from bridge.models import HttpServerSpec, ServerSpec, StdioServerSpec
from bridge.ssrf import Reach
from bridge.wording import count
from sandbox import Launch, SandboxConfig

logger = logging.getLogger("mcp_bridge.connection")

_MIB = 1024 * 1024
EXCERPT_CHARS = 300
# How the SDK's HTTP client words an answer it could not parse; the rest of its text is pydantic's.
_SDK_PARSE_FAILURES = ("Failed to parse JSON response", "Failed to parse SSE message")


@dataclass(frozen=True)
class SessionSettings:
    """`timeout` bounds one operation on an open session; `start_timeout` the spawn or connect and
    the handshake; `max_list_pages` and `max_tools` what one tools/list may make the bridge hold."""

    timeout: float
    sandbox: SandboxConfig
    workspace: Path
    idle_s: float = 300.0
    max_sessions: int = 16
    start_timeout: float = 180.0
    max_list_pages: int = 100
    max_tools: int = 5000
    # Where servers the conversation added may connect (`bridge.ssrf`); the operator's reach anywhere.
    conversation_reach: Reach = "no-metadata"
    resolver: Resolver = field(default=system_resolver)


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def _excerpt(text: str) -> str:
    """What the bridge shows of a server's own words: one bounded line (redacted by `classify`)."""
    line = " ".join(text.split())
    return line if len(line) <= EXCERPT_CHARS else line[: EXCERPT_CHARS - 1] + "…"


def _http_hint(status: int) -> str:
    return {
        401: " (unauthorized: check the headers, e.g. Authorization)",
        403: " (forbidden: the credentials lack access)",
        404: " (not found: check the URL path, often /mcp)",
    }.get(status, "")


class Connection:
    """One attempt to reach a server: the transport for its spec, and what it saw go wrong."""

    def __init__(
        self,
        name: str,
        spec: ServerSpec,
        settings: SessionSettings,
        support: ChildSupport | None = None,
        *,
        auth: Callable[[], httpx2.Auth | None] = lambda: None,
    ) -> None:
        """`auth()` gives what signs HTTP requests in (the server's stored OAuth tokens), when there are any."""
        self.name = name
        self.spec = spec
        self.settings = settings
        self.support = support or ChildSupport()
        self.auth = auth
        self.children: list[Child] = []
        self.launch: Launch | None = None  # the stdio child's sandboxed launch, once prepared
        self.started = False  # the handshake completed: a timeout from here on is a call's
        # The child printed only text that is not JSON-RPC (for a while, or until its stdout ended).
        self.not_mcp = False
        self.statuses: list[int] = []
        self.challenged = False  # the MCP endpoint answered 401
        # The MCP endpoint answered 403 insufficient_scope, naming these scopes ("" when it named none).
        self.step_up_scope: str | None = None
        self.requested: set[str] = set()  # every URL an HTTP request went to
        self.redirect: Redirect | None = None  # the latest redirect answer
        self.content_type = ""  # of the latest answer
        # Set when the SSRF check refused the target: nothing was dialled.
        self.refused: BridgeError | None = None
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
        spec = self.spec
        secrets = list(spec.headers.values() if isinstance(spec, HttpServerSpec) else spec.env.values())
        return redact(error, secrets)

    def _classify(self, leaves: list[BaseException]) -> BridgeError:
        child, statuses = self.child, self.statuses
        for leaf in leaves:
            if isinstance(leaf, BridgeError):
                return leaf
        if self.refused is not None:
            return self.refused
        if self.oversized:
            too_large = f"The server sent a message over {MAX_MESSAGE_BYTES // _MIB} MiB; the session was closed."
            return BridgeError("protocol_error", too_large)
        if child is not None and self.not_mcp:
            return self._not_mcp(child)
        if child is not None and (code := child.exit_code) is not None:
            tail = child.stderr_tail()
            said, extra = self._sandbox_says(child)
            last = f" Last stderr: {tail[-1]}" if tail else ""
            return BridgeError(
                "child_exited", f"The server process exited with code {code}.{said}{last}",
                exit_code=code, stderr_tail=tail, **extra,
            )  # fmt: skip
        if self.challenged or self.step_up_scope is not None or any(isinstance(leaf, OAuthFlowError) for leaf in leaves):
            return self._sign_in_needed()
        if any(isinstance(leaf, TimeoutError | httpx2.TimeoutException) for leaf in leaves):
            if child is not None and child.never_spoke_mcp:
                return self._not_mcp(child)
            return self._timeout(child)
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
                if leaf.code == PARSE_ERROR and leaf.message.startswith(_SDK_PARSE_FAILURES):
                    return self._not_jsonrpc()  # the SDK's text quotes the answer (pydantic's `input_value`)
                message = _excerpt(leaf.message)
                return BridgeError("protocol_error", f"MCP error from the server: {message}", mcp_code=leaf.code)
        for leaf in leaves:
            if isinstance(leaf, ValidationError):
                # Its text and its `loc` quote the answer (`input_value`, the answer's own keys): the model's name only.
                errors = count(leaf.error_count(), "error")
                what = f"{leaf.title[:80]}, {errors}"
                return BridgeError("protocol_error", f"The server's answer is not valid MCP ({what}).")
        first = leaves[0]
        return BridgeError("protocol_error", f"The session failed: {type(first).__name__}: {_excerpt(str(first))}")

    def _not_jsonrpc(self) -> BridgeError:
        """What the bridge saw, never what the answer held: pydantic quotes values and keys of its input."""
        statuses = self.statuses
        seen = f" (HTTP {statuses[-1]}, {self.content_type or 'no content type'})" if statuses else ""
        return BridgeError("protocol_error", f"The server's answer is not a JSON-RPC message{seen}.")

    def _sign_in_needed(self) -> BridgeError:
        """A 401 from the MCP endpoint, a 403 asking for more scope, or a sign-in that can no longer
        be refreshed."""
        command = f"mcp-bridge auth login {self.name}"
        spec = self.spec
        if isinstance(spec, HttpServerSpec) and spec.oauth is not None and spec.oauth.grant == "client_credentials":
            return BridgeError(
                "auth_required",
                f"The server {self.name!r} refused the bridge's client credentials (config.MCP_SERVERS oauth); "
                "the operator must check them. No user sign-in can help.",
            )
        if self.step_up_scope is not None:
            return BridgeError(
                "auth_required",
                f"The server {self.name!r} needs a sign-in with more scope ({self.step_up_scope or 'unnamed'}). Ask the "
                f"user to run `{command}` in a terminal on the machine running the bridge, then call again.",
                command=command,
                scope=self.step_up_scope,
            )
        return BridgeError(
            "auth_required",
            f"The server {self.name!r} needs the user to sign in with OAuth. Ask the user to run `{command}` "
            "in a terminal on the machine running the bridge (it opens the sign-in page), then call again.",
            command=command,
        )

    def _sandbox_says(self, child: Child | None) -> tuple[str, dict[str, str]]:
        """The sandbox's part in the failure: a sentence to append and a detail entry (or nothing)."""
        if child is None:
            return "", {}
        note = sandbox_note(self.launch, self.support.proxy, child.process.returncode, child.stderr_tail())
        if note is None:
            return "", {}
        return f" {note[0].upper()}{note[1:]}.", {"sandbox": note}

    def _timeout(self, child: Child | None) -> BridgeError:
        stopped = "; it was stopped" if child is not None else ""
        said, extra = self._sandbox_says(child)
        if not self.started:
            return BridgeError(
                "timeout",
                f"The server did not start within {self.settings.start_timeout:g} s (MCP_START_TIMEOUT){stopped}.{said}",
                **extra,
            )
        return BridgeError(
            "timeout", f"The server did not answer within {self.settings.timeout:g} s (MCP_TIMEOUT){stopped}.{said}", **extra
        )

    def _not_mcp(self, child: Child) -> BridgeError:
        if child.non_json_lines:
            lines = count(child.non_json_lines, "line")
            what = f"printed text that is not JSON-RPC ({lines}; first: {child.first_non_json!r})"
            if (code := child.exit_code) is not None:
                what += f", exited with code {code}"
            elif self.not_mcp:
                what += f", nothing else for {NOT_MCP_AFTER_S:g} s"
        else:
            what = f"answered only request ids the bridge never sent ({count(child.stray_responses, 'answer')})"
        return BridgeError(
            "protocol_error",
            f"The server does not speak MCP over stdio: it {what} and never answered a request.",
            non_json_lines=child.non_json_lines,
            stray_responses=child.stray_responses,
        )
