"""Types shared by the bridge tests' fixtures (conftest.py) and the tests that use them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge.errors import ErrorResult
from bridge.tools import Bridge, Reply

MakeBridge = Callable[..., Bridge]
StdioArgs = Callable[..., str]


@dataclass(frozen=True)
class BridgeDirs:
    """A test's workspace and state dir (under /var/tmp), and where the registry files go."""

    workspace: Path
    state: Path

    @property
    def homes(self) -> Path:
        """The servers' private homes, apart from every other test's (and from the real home)."""
        return self.workspace.parent / "homes"

    @property
    def registry(self) -> Path:
        return self.state / "tool_mcp" / "servers.json"

    @property
    def legacy_registry(self) -> Path:
        return self.workspace / "tool_mcp" / "servers.json"


def ok(reply: Reply) -> Reply:
    assert not reply.is_error, reply.text
    return reply


def error(reply: Reply, code: str) -> ErrorResult:
    assert reply.is_error, f"expected {code}, got success: {reply.text}"
    assert isinstance(reply.data, ErrorResult)
    assert reply.data.code == code, reply.text
    assert reply.text.startswith(f"Error [{code}]")
    return reply.data
