"""Benchmark: the bridge against talking to the downstream server directly, measured in one run.

Run: .venv/bin/python bench/bench_bridge.py [--calls 500] [--cold 7]

Both sides use the same MCP SDK client and the same downstream fixture (tests/servers/echo.py over
stdio). The bridge runs as a host runs it: `mcp-bridge` spawned as a process, spoken to over stdio.
Every figure is a median over repeated runs; what matters is the ratio, printed last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
ECHO = str(ROOT / "tests/servers/echo.py")
MANY = str(ROOT / "tests/servers/many_tools.py")
BRIDGE = str(Path(sys.executable).with_name("mcp-bridge"))
WARM_ROUNDS = 10


async def timed(func: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    result = await func()
    elapsed = time.perf_counter() - start
    if getattr(result, "is_error", False):
        raise RuntimeError(f"call failed: {result.content}")
    return elapsed


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


async def add(bridge: Client, name: str, script: str) -> None:
    result = await bridge.call_tool("mcp_add_server", {"name": name, "command": sys.executable, "args_json": json.dumps([script])})
    assert not result.is_error, result.content


def call(bridge: Client, server: str, tool: str, arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
    return lambda: bridge.call_tool(
        "mcp_call_tool", {"server": server, "tool_name": tool, "arguments_json": json.dumps(arguments)}
    )


async def main(calls: int, cold_runs: int) -> None:
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="bridge-bench-"))
    (base / "ws").mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/root"),
        "MCP_WORKSPACE": str(base / "ws"),
        "MCP_STATE_DIR": str(base / "state"),
        "MCP_CHILD_ENV_PREFIXES": "FIXTURE_",
        "FIXTURE_TOOL_COUNT": "1000",
        "MCP_MAX_SESSIONS": "32",
    }
    direct_params = StdioServerParameters(command=sys.executable, args=[ECHO])
    rows: list[tuple[str, str, str, str]] = []
    try:
        async with Client(StdioServerParameters(command=BRIDGE, env=env)) as bridge:
            # warm: an open session on each side
            await add(bridge, "echo", ECHO)
            async with Client(direct_params) as direct:
                for _ in range(10):
                    await direct.call_tool("echo", {"text": "warm"})
                    await call(bridge, "echo", "echo", {"text": "warm"})()
                direct_warm: list[float] = []
                bridge_warm: list[float] = []
                for _ in range(WARM_ROUNDS):  # alternate blocks, so both sides meet the same load on the machine
                    direct_warm += [await timed(lambda: direct.call_tool("echo", {"text": "x"})) for _ in range(calls // WARM_ROUNDS)]
                    bridge_warm += [await timed(call(bridge, "echo", "echo", {"text": "x"})) for _ in range(calls // WARM_ROUNDS)]
            d, b = statistics.median(direct_warm), statistics.median(bridge_warm)
            rows.append(("warm call", f"{d * 1000:.2f} ms direct", f"{b * 1000:.2f} ms bridged", f"{b / d:.2f}x (target <= 2.5x)"))

            # cold: spawn + initialize + call, direct vs the first call after mcp_add_server
            direct_cold, bridge_cold = [], []
            for i in range(cold_runs):

                start = time.perf_counter()
                async with Client(direct_params) as fresh:  # spawn + initialize happen on entry
                    await fresh.call_tool("echo", {"text": "cold"})
                    direct_cold.append(time.perf_counter() - start)  # closing is not counted
                await add(bridge, f"cold{i}", ECHO)
                bridge_cold.append(await timed(call(bridge, f"cold{i}", "echo", {"text": "cold"})))
            d, b = statistics.median(direct_cold), statistics.median(bridge_cold)
            rows.append(("cold call", f"{d * 1000:.0f} ms direct", f"{b * 1000:.0f} ms bridged", f"{b / d:.2f}x (target <= 1.15x)"))

            # fan-out: 50 concurrent calls over 10 servers, each sleeping 200 ms
            for i in range(10):
                await add(bridge, f"fan{i}", ECHO)
                await call(bridge, f"fan{i}", "echo", {"text": "warm"})()
            walls = []
            for _ in range(3):
                start = time.perf_counter()
                results = await asyncio.gather(*(call(bridge, f"fan{i % 10}", "slow", {"seconds": 0.2})() for i in range(50)))
                walls.append(time.perf_counter() - start)
                assert not any(result.is_error for result in results)
            w = statistics.median(walls)
            rows.append(("fan-out 50 x 200 ms / 10 servers", "200 ms ideal", f"{w * 1000:.0f} ms wall", f"{w / 0.2:.2f}x (target <= 1.5x)"))

            # catalog: 1000 tools, first listing (spawn + list) vs cached
            await add(bridge, "many", MANY)
            listing = lambda: bridge.call_tool("mcp_list_tools", {"server": "many"})  # noqa: E731
            first = await timed(listing)
            cached = statistics.median([await timed(listing) for _ in range(20)])
            text = (await listing()).content[0].text  # type: ignore[union-attr]
            kept = sum(f"tool_{n:04d}" in text for n in range(1000))
            rows.append(("catalog, 1000 tools", f"{first * 1000:.0f} ms first", f"{cached * 1000:.1f} ms cached", f"{first / cached:.0f}x faster cached; {kept}/1000 names in {len(text)} chars"))

            # memory: the bridge with 16 live sessions
            bridge_pid = next(pid for pid in children_of(os.getpid()) if "mcp-bridge" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"))
            for i in range(16):
                await call(bridge, f"cold{i % cold_runs}" if i < cold_runs else f"fan{i - cold_runs}", "echo", {"text": "m"})()
            rows.append(("memory, 16+ live sessions", "", f"{rss_kib(bridge_pid) / 1024:.0f} MiB bridge RSS", "children not counted"))
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print(f"\nmcp-bridge benchmark ({calls} warm calls, {cold_runs} cold runs; medians)\n")
    print("| measure | direct | bridge | ratio |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--cold", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.cold))
