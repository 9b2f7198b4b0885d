"""The code table, the one error type, and the one formatter of validation errors.

Every failure is a `BridgeError` carrying exactly one of these codes:

    code               when                                                   retryable
    invalid_argument   an input fails validation, before any session opens    no
    unknown_server     the server is not registered                           no
    unknown_tool       the downstream server does not offer the tool          no
    forbidden          e.g. removing a developer-provisioned server            no
    registry_error     registry corrupt on write; lock timeout (retryable)    lock: yes
    spawn_failed       the child could not start, or no sandbox is available  no
    child_exited       the child died (exit code, last lines of its stderr)   yes
    connect_failed     HTTP connect/TLS/DNS failure, or a 5xx                 yes
    http_error         HTTP 4xx (401/403/404)                                 no
    auth_required      the server needs an OAuth sign-in (how, in the message)  no
    protocol_error     not MCP, handshake failure                             no
    timeout            over MCP_TIMEOUT; the child is killed                  yes
    tool_error         the downstream tool returned isError                   no
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

ErrorCode = Literal[
    "invalid_argument",
    "unknown_server",
    "unknown_tool",
    "forbidden",
    "registry_error",
    "spawn_failed",
    "child_exited",
    "connect_failed",
    "http_error",
    "auth_required",
    "protocol_error",
    "timeout",
    "tool_error",
]

_RETRYABLE: frozenset[str] = frozenset({"child_exited", "connect_failed", "timeout"})


class ErrorResult(BaseModel):
    """The structured content of every failed tool call."""

    ok: Literal[False] = False
    code: ErrorCode
    retryable: bool
    message: str
    detail: dict[str, Any] = Field(default_factory=dict)


class BridgeError(Exception):
    """A classified failure; the tools turn it into an `ErrorResult`."""

    def __init__(
        self, code: ErrorCode, message: str, *, retryable: bool | None = None, **detail: Any
    ) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.retryable = code in _RETRYABLE if retryable is None else retryable
        self.detail = detail

    def to_result(self) -> ErrorResult:
        return ErrorResult(code=self.code, retryable=self.retryable, message=self.message, detail=self.detail)


def not_found(code: ErrorCode, message: str, name: str, candidates: list[str], hint: str) -> BridgeError:
    """An unknown name, with up to three close matches (or `hint` when none is close)."""
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    suffix = f" Did you mean: {', '.join(close)}?" if close else f" {hint}"
    return BridgeError(code, f"{message}{suffix}", close_matches=close)


def unknown_tool(name: str, names: list[str]) -> BridgeError:
    return not_found(
        "unknown_tool", f"The server offers no tool named {name!r}.", name, names, "Call mcp_list_tools to see the tools."
    )


def describe_validation(exc: ValidationError, *, name: Callable[[str], str] = str) -> str:
    """Each failing field and what is wrong with it, never the value given: it may be a secret.

    `name` renders a field's dotted location (settings name their env variable).
    """
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"])
        problems.append(f"{name(where)}: {error['msg']}")
    return "; ".join(problems)
