"""Benchmark: the bridge against talking to the same downstream server directly, measured in one run.

Run: .venv/bin/python bench/bench_bridge.py [--calls 500] [--cold 7] [--no-time]

Both sides use the same MCP SDK client and the same downstream servers. The bridge runs as a host
runs it: `mcp-bridge` spawned as a process, spoken to over stdio (or served over Streamable HTTP for
the HTTP rows). Warm figures are medians over blocks that alternate the bridged call, the direct
one and two references, so all meet the same load on the machine: the two round trips a bridged
call makes, made directly (two SDK hops with nothing between them), and the same call through
`raw_relay.py`, a relay that parses nothing (the least any process in between adds). It prints
one table: measure, bridged, direct, ratio, target.
It asserts nothing: speed is measured here, never in the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
ECHO = str(ROOT / "tests/servers/echo.py")
MANY = str(ROOT / "tests/servers/many_tools.py")
RELAY = str(ROOT / "tests/servers/relay.py")
BARE = str(ROOT / "bench/bare_server.py")
RAW_RELAY = str(ROOT / "bench/raw_relay.py")
TINY = str(ROOT / "tests/servers/tiny_stdio.py")
BRIDGE = str(Path(sys.executable).with_name("mcp-bridge"))
ROUNDS = 10


@dataclass
class Row:
    measure: str
    bridged: str
    direct: str
    ratio: str
    target: str


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def ratio_row(measure: str, bridged: float, direct: float, target: float | None) -> Row:
    return Row(measure, ms(bridged), ms(direct), f"{bridged / direct:.2f}x", f"<= {target}x" if target else "")


async def interleaved(sides: Sequence[Callable[[], Awaitable[Any]]], calls: int) -> list[float]:
    """Median seconds per call of each side, over `ROUNDS` blocks in turn: a bridged figure, its
    direct one and its references are read against the same machine."""
    for _ in range(10):  # warm them all
        for side in sides:
            await side()
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(ROUNDS):
        for side, taken in zip(sides, times, strict=True):
            for _ in range(calls // ROUNDS):
                start = time.perf_counter()
                result = await side()
                taken.append(time.perf_counter() - start)
                if getattr(result, "is_error", False):
                    raise RuntimeError(f"call failed: {result.content}")
    return [statistics.median(taken) for taken in times]


def back_to_back(first: Callable[[], Awaitable[Any]], second: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    """Two direct calls in turn: the two MCP round trips a bridged call makes, with nothing of the
    bridge's own in between."""

    async def both() -> Any:
        await first()
        return await second()

    return both


def relayed(*command: str) -> StdioServerParameters:
    """`command` behind `raw_relay.py` over stdio, as the host would reach it behind the bridge."""
    return StdioServerParameters(command=sys.executable, args=[RAW_RELAY, "stdio", *command])


def echo_call(client: Client) -> Callable[[], Awaitable[Any]]:
    return lambda: client.call_tool("echo", {"text": "x"})


def floor_row(what: str, floor: float, direct: float, bridged: float) -> Row:
    """The row above's two round trips made directly: what a bridge built of the same SDK client and
    FastMCP server as the host and the server use would measure if its own work cost nothing."""
    return Row(
        f"the row above's two round trips made directly: {what}", ms(floor), ms(direct), f"{floor / direct:.2f}x",
        f"two SDK hops and nothing between them; the bridged row is {bridged / floor:.2f}x this",
    )  # fmt: skip


def relay_row(relay: float, direct: float, bridged: float) -> Row:
    """The bridged row's call through `raw_relay.py` in the bridge's place: the least any process
    in between adds on this machine, since it understands nothing of MCP."""
    return Row(
        "the same call through a relay that parses nothing (bench/raw_relay.py)", ms(relay), ms(direct),
        f"{relay / direct:.2f}x", f"the least a process in between adds; the bridged row is {bridged / relay:.2f}x this",
    )  # fmt: skip


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User and system CPU a process has used, from /proc (ticks of `SC_CLK_TCK`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    return [int(child) for path in Path(f"/proc/{pid}/task").glob("*/children") for child in path.read_text().split()]


def descendants(pid: int) -> list[int]:
    below = children(pid)
    return below + [grandchild for child in below for grandchild in descendants(child)]


async def cpu_per_call(pid: int, call: Callable[[], Awaitable[Any]], calls: int) -> tuple[float, float]:
    """CPU seconds a call costs the bridge process `pid`, and the servers it runs, over `calls` calls."""
    servers = descendants(pid)
    bridge_before, servers_before = cpu_seconds(pid), sum(map(cpu_seconds, servers))
    for _ in range(calls):
        await call()
    bridge_used, servers_used = cpu_seconds(pid) - bridge_before, sum(map(cpu_seconds, servers)) - servers_before
    return bridge_used / calls, servers_used / calls


def live_sessions(pid: int) -> int:
    """The bridge's live stdio sessions: its child processes (`bwrap`, or the server itself), one each.

    Counted, not inferred from the servers added: `MCP_MAX_SESSIONS` closes the least recently used."""
    return len(children(pid))


def bridge_pid() -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_text(errors="replace")
            except OSError:
                continue
            if int(stat[1]) == os.getpid() and "mcp-bridge" in cmdline:
                return int(entry.name)
    raise RuntimeError("no bridge process")


async def rss_with_sessions(env: dict[str, str], sessions: int) -> tuple[int, int, int]:
    """A fresh bridge's RSS in KiB with one live session and with `sessions`, and how many were live
    (counted: a session that failed to stay open would show). Run while no other bridge is up."""
    async with Client(StdioServerParameters(command=BRIDGE, env=env)) as bridge:
        pid = bridge_pid()
        one = 0
        for i in range(sessions):
            await add(bridge, f"live{i}", sys.executable, ECHO)
            listed = await bridge.call_tool("mcp_list_tools", {"server": f"live{i}"})
            if listed.is_error:
                raise RuntimeError(f"listing live{i} failed: {listed.content}")
            one = one or rss_kib(pid)
        return one, rss_kib(pid), live_sessions(pid)


def tool_call(bridge: Client, server: str, tool: str, arguments: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
    return lambda: bridge.call_tool("mcp_call_tool", {"server": server, "tool_name": tool, "arguments_json": json.dumps(arguments)})


def bridged_echo(bridge: Client) -> Callable[[], Awaitable[Any]]:
    """The warm rows' bridged call: the echo server added as "echo"."""
    return tool_call(bridge, "echo", "echo", {"text": "x"})


RELAY_CALL = {"server": "relay", "tool_name": "progress", "arguments_json": json.dumps({"steps": 1})}


async def until_progress(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    """Seconds from sending a call to its first progress notification reaching `client` (the call
    is then awaited to its end, outside the measure)."""
    arrived: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        arrived.append(time.perf_counter())

    start = time.perf_counter()
    await client.call_tool(tool, arguments, progress_callback=on_progress)
    return arrived[0] - start


async def progress_relayed(direct: Client, bridge: Client, rounds: int) -> tuple[float, float]:
    """Median seconds to the first progress notification, bridged and direct, alternating."""
    bridged, straight = [], []
    for _ in range(rounds):
        straight.append(await until_progress(direct, "progress", {"steps": 1}))
        bridged.append(await until_progress(bridge, "mcp_call_tool", RELAY_CALL))
    return statistics.median(bridged), statistics.median(straight)


async def add(bridge: Client, name: str, command: str, *args: str) -> None:
    result = await bridge.call_tool("mcp_add_server", {"name": name, "command": command, "args_json": json.dumps(list(args))})
    if result.is_error:
        raise RuntimeError(f"adding {name} failed: {result.content}")


@asynccontextmanager
async def serving(argv: list[str], env: dict[str, str], announces: str, on_stderr: bool) -> AsyncIterator[str]:
    """Run an HTTP server process and yield its /mcp URL, read from the line it announces it in."""
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    stream = proc.stderr if on_stderr else proc.stdout
    assert stream is not None
    try:
        for line in stream:
            if found := re.search(announces, line):
                break
        else:
            raise RuntimeError(f"{argv[:2]} did not start")
        url = found.group(1)
        yield url if url.startswith("http") else f"http://127.0.0.1:{url}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def time_server(base: Path) -> str | None:
    """`mcp-server-time` from PyPI in a venv of its own (it pins an older MCP SDK), or None."""
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    venv = base / "time-venv"
    try:
        subprocess.run([uv, "venv", "-q", str(venv)], check=True, capture_output=True, timeout=300)
        subprocess.run(
            [uv, "pip", "install", "-q", "--python", str(venv / "bin/python"), "mcp-server-time"],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"(no mcp-server-time row: {exc})", file=sys.stderr)
        return None
    return str(venv / "bin/mcp-server-time")


async def startup(bridged: StdioServerParameters, direct: StdioServerParameters, runs: int) -> tuple[float, float]:
    """Median seconds from spawn to the first tools/list answered, of each side, the runs alternating
    (so both meet the same machine: run one side after the other, four runs of seven on this VM
    ranged 0.81-1.25x)."""
    times: dict[str, list[float]] = {"bridged": [], "direct": []}
    for _ in range(runs):
        for side, params in (("bridged", bridged), ("direct", direct)):
            start = time.perf_counter()
            async with Client(params) as client:
                await client.list_tools()
                times[side].append(time.perf_counter() - start)
    return statistics.median(times["bridged"]), statistics.median(times["direct"])


async def main(calls: int, cold_runs: int, with_time: bool) -> None:
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
    env |= {name: os.environ[name] for name in ("SSL_CERT_FILE", "SSL_CERT_DIR") if name in os.environ}
    rows: list[Row] = []
    direct_echo = StdioServerParameters(command=sys.executable, args=[ECHO])
    try:
        plain_env = {**env, "MCP_SANDBOX": "none", "MCP_STATE_DIR": str(base / "state-none")}
        async with Client(StdioServerParameters(command=BRIDGE, env=env)) as bridge:
            await add(bridge, "echo", sys.executable, ECHO)
            async with Client(direct_echo) as direct, Client(relayed(sys.executable, ECHO)) as relay:
                echo = echo_call(direct)
                b, d, f, r = await interleaved(
                    [bridged_echo(bridge), echo, back_to_back(echo, echo), echo_call(relay)], calls
                )
                rows.append(ratio_row("warm stdio call, FastMCP echo", b, d, 2.0))
                rows.append(floor_row("two direct stdio calls back to back", f, d, b))
                rows.append(relay_row(r, d, b))
            # Read in the same calls, so a machine that slows down slows both: the bridge's own
            # share, which wall-clock ratios on a shared VM only show through its noise.
            mine, theirs = await cpu_per_call(bridge_pid(), bridged_echo(bridge), calls * 2)
            rows.append(Row(
                "CPU a warm echo call costs: the bridge process, and the echo server behind it", ms(mine), ms(theirs),
                f"{mine / theirs:.2f}x", "the bridge's work for a call, against one FastMCP server's",
            ))  # fmt: skip

            time_command = time_server(base) if with_time else None
            if time_command is not None:
                await add(bridge, "time", time_command)
                arguments = {"timezone": "Europe/Paris"}
                async with (
                    Client(StdioServerParameters(command=time_command)) as direct,
                    Client(direct_echo) as echo_server,
                    Client(relayed(time_command)) as relay,
                ):
                    now = functools.partial(direct.call_tool, "get_current_time", arguments)
                    # The host's hop is to a FastMCP server over stdio (the bridge is one): the echo stands in.
                    floor = back_to_back(echo_call(echo_server), now)
                    relayed_now = functools.partial(relay.call_tool, "get_current_time", arguments)
                    b, d, f, r = await interleaved(
                        [tool_call(bridge, "time", "get_current_time", arguments), now, floor, relayed_now], calls
                    )
                    rows.append(ratio_row("warm stdio call, mcp-server-time", b, d, 2.0))
                    rows.append(floor_row("a direct echo call and a direct mcp-server-time call back to back", f, d, b))
                    rows.append(relay_row(r, d, b))

            direct_cold, bridge_cold = [], []
            for i in range(cold_runs):  # interleaved, so both meet the same machine
                start = time.perf_counter()
                async with Client(direct_echo) as fresh:  # spawn + initialize happen on entry
                    await fresh.call_tool("echo", {"text": "cold"})
                    direct_cold.append(time.perf_counter() - start)
                await add(bridge, f"cold{i}", sys.executable, ECHO)
                start = time.perf_counter()
                await tool_call(bridge, f"cold{i}", "echo", {"text": "cold"})()
                bridge_cold.append(time.perf_counter() - start)
            rows.append(ratio_row("cold call (spawn, sandboxed on the bridge's side)", statistics.median(bridge_cold), statistics.median(direct_cold), None))
            sandboxed, unsandboxed = [], []
            async with Client(StdioServerParameters(command=BRIDGE, env=plain_env)) as plain:
                for i in range(cold_runs * 3):  # a stdlib-only server: the spawn is not lost in FastMCP's import
                    for side, times in ((bridge, sandboxed), (plain, unsandboxed)):
                        await add(side, f"tiny{i}", sys.executable, "-I", TINY)
                        start = time.perf_counter()
                        listed = await side.call_tool("mcp_list_tools", {"server": f"tiny{i}"})
                        times.append(time.perf_counter() - start)
                        if listed.is_error:
                            raise RuntimeError(f"listing tiny{i} failed: {listed.content}")
            spawn, bare = statistics.median(sandboxed), statistics.median(unsandboxed)
            rows.append(Row(
                "a spawn in the sandbox: first listing of a tiny server, sandboxed vs MCP_SANDBOX=none", ms(spawn),
                ms(bare), f"{spawn / bare:.2f}x", f"{(spawn - bare) * 1000:+.1f} ms a spawn; bench_sandbox.py splits it",
            ))  # fmt: skip

            await add(bridge, "relay", sys.executable, RELAY)
            async with Client(StdioServerParameters(command=sys.executable, args=[RELAY])) as direct:
                b, d = await progress_relayed(direct, bridge, calls // 5)
            rows.append(ratio_row("a progress notification relayed: call to its arrival at the host", b, d, None))

            for i in range(10):
                await add(bridge, f"fan{i}", sys.executable, ECHO)
                await tool_call(bridge, f"fan{i}", "echo", {"text": "warm"})()
            async with AsyncExitStack() as stack:
                servers = [await stack.enter_async_context(Client(direct_echo)) for _ in range(10)]
                bridged_walls, direct_walls = [], []
                for _ in range(3):  # alternating, so both meet the same machine
                    for walls, call in (
                        (bridged_walls, lambda i: tool_call(bridge, f"fan{i % 10}", "slow", {"seconds": 0.2})()),
                        (direct_walls, lambda i: servers[i % 10].call_tool("slow", {"seconds": 0.2})),
                    ):
                        start = time.perf_counter()
                        await asyncio.gather(*(call(i) for i in range(50)))
                        walls.append(time.perf_counter() - start)
            fan_out, straight = statistics.median(bridged_walls), statistics.median(direct_walls)
            rows.append(Row("fan-out: 50 concurrent 200 ms calls over 10 servers", ms(fan_out), "200 ms ideal", f"{fan_out / 0.2:.2f}x", "<= 1.3x"))
            rows.append(Row(
                "the same 50 calls made directly, over 10 sessions of their own (one hop, not two)", ms(straight),
                "200 ms ideal", f"{straight / 0.2:.2f}x", "the host's and the servers' share of the CPU",
            ))  # fmt: skip

            await add(bridge, "many", sys.executable, MANY)
            many_env = {**os.environ, "FIXTURE_TOOL_COUNT": "1000"}
            direct_lists = []
            for _ in range(3):
                start = time.perf_counter()
                async with Client(StdioServerParameters(command=sys.executable, args=[MANY], env=many_env)) as client:
                    await client.list_tools()
                direct_lists.append(time.perf_counter() - start)
            start = time.perf_counter()
            listed = await bridge.call_tool("mcp_list_tools", {"server": "many"})
            first = time.perf_counter() - start
            cached = []
            for _ in range(20):
                start = time.perf_counter()
                await bridge.call_tool("mcp_list_tools", {"server": "many"})
                cached.append(time.perf_counter() - start)
            text = listed.content[0].text  # type: ignore[union-attr]
            kept = sum(f"tool_{n:04d}" in text for n in range(1000))
            rows.append(ratio_row("catalog of 1000 tools, first listing (spawn + list)", first, statistics.median(direct_lists), 1.2))
            rows.append(Row("catalog of 1000 tools, cached", ms(statistics.median(cached)), "", "", f"{kept}/1000 names kept"))

        http_env = {**env, "MCP_STATE_DIR": str(base / "state-http")}
        direct_http = [sys.executable, ECHO, "--http"]
        async with (
            serving([BRIDGE, "--transport", "http", "--port", "0"], http_env, r"serving Streamable HTTP at (\S+)", on_stderr=True) as bridge_url,
            serving(direct_http, dict(os.environ), r"PORT (\d+)", on_stderr=False) as direct_url,
            serving([sys.executable, RAW_RELAY, "http", sys.executable, ECHO], dict(os.environ), r"PORT (\d+)", on_stderr=False) as relay_url,
            Client(streamable_http_client(bridge_url)) as bridge,
            Client(streamable_http_client(direct_url)) as direct,
            Client(streamable_http_client(relay_url)) as relay,
            Client(direct_echo) as direct_stdio,
        ):
            await add(bridge, "echo", sys.executable, ECHO)
            floor = back_to_back(echo_call(direct), echo_call(direct_stdio))
            b, d, f, r = await interleaved(
                [bridged_echo(bridge), echo_call(direct), floor, echo_call(relay)], calls
            )
            rows.append(ratio_row("warm call over Streamable HTTP (to a stdio echo)", b, d, 1.5))
            rows.append(floor_row("a direct HTTP call and a direct stdio call back to back", f, d, b))
            rows.append(relay_row(r, d, b))

        one, many, live = await rss_with_sessions({**env, "MCP_STATE_DIR": str(base / "state-rss")}, 16)
        rows.append(Row(
            f"bridge RSS with {live} live sessions (a fresh bridge, a FastMCP echo server each)", f"{many / 1024:.0f} MiB", "", "",
            f"~{(many - one) / 1024 / (live - 1):.2f} MiB per live session over the first; children not counted",
        ))  # fmt: skip

        bridge_start, bare_start = await startup(
            StdioServerParameters(command=BRIDGE, env=env), StdioServerParameters(command=sys.executable, args=[BARE]), 2 * cold_runs
        )
        rows.append(ratio_row("start-up: spawn to first tools/list answered", bridge_start, bare_start, 1.1))
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print(f"\nmcp-bridge benchmark ({calls} warm calls a side, {cold_runs} cold runs; medians)\n")
    print("| measure | bridged | direct | ratio | target |\n|---|---|---|---|---|")
    for row in rows:
        print(f"| {row.measure} | {row.bridged} | {row.direct} | {row.ratio} | {row.target} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--cold", type=int, default=7)
    parser.add_argument("--no-time", action="store_true", help="skip the mcp-server-time rows (they download it)")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.cold, not args.no_time))
