"""What the hostile-children and hostile-HTTP matrices share: the time bound, timing a reply, a real
bridge process driven over HTTP, and its peak memory.

The bound is the spec, not a benchmark: every call ends within MCP_TIMEOUT (and MCP_START_TIMEOUT,
set to the same) plus a generous grace.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bridge_proc import HttpBridge, HttpPeer, host_env, http_bridge, http_peer, workdirs

from bridge.tools import Reply

TIMEOUT_S = 3.0
GRACE_S = 10.0
BOUND_S = TIMEOUT_S + GRACE_S
PEAK_RSS_BOUND_MIB = 300
GONE_WITHIN_S = 10.0


def timed(call: Callable[[], Reply]) -> tuple[Reply, float]:
    start = time.monotonic()
    reply = call()
    return reply, time.monotonic() - start


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set size (VmHWM) so far, in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


@dataclass
class RealBridge:
    """A real `mcp-bridge --transport http` and a host session on it."""

    process: HttpBridge
    peer: HttpPeer

    @property
    def pid(self) -> int:
        return self.process.proc.pid

    def tool(self, tool: str, /, **arguments: Any) -> tuple[dict[str, Any], float]:
        """Call one of the bridge's four tools; return its structured content and how long it took."""
        start = time.monotonic()
        result = self.peer.request("tools/call", {"name": tool, "arguments": arguments})
        return result["structuredContent"], time.monotonic() - start

    def add(self, name: str, **spec: str) -> None:
        added, _ = self.tool("mcp_add_server", name=name, **spec)
        assert added["ok"], added

    def call(self, server: str, tool_name: str, arguments: dict[str, Any] | None = None) -> tuple[dict[str, Any], float]:
        return self.tool("mcp_call_tool", server=server, tool_name=tool_name, arguments_json=json.dumps(arguments or {}))


@contextmanager
def real_bridge() -> Iterator[RealBridge]:
    """A bridge process with MCP_TIMEOUT=TIMEOUT_S, after the host's handshake."""
    with (
        workdirs() as dirs,
        http_bridge(
            host_env(dirs, MCP_TIMEOUT=str(TIMEOUT_S), MCP_START_TIMEOUT=str(TIMEOUT_S), MCP_HTTP_ALLOW_PRIVATE="1")
        ) as process,
        http_peer(process.url) as peer,
    ):
        peer.handshake()
        yield RealBridge(process, peer)
