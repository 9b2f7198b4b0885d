"""What the v2 sandbox costs per spawn: spawn to the first `initialize` answer, in one run, for
no sandbox, the old sandbox (the v1 argv: no private home, no seccomp, no limits, no
placeholders) and the new one (with its default network, and with network deny), for a tiny
Python MCP server and an `npx` server with a warm cache. The npx server's default is
registry-only through the proxy and the in-sandbox forwarder, which the deny row leaves out.

Then the new sandbox's parts, each row the deny launch with parts taken away (argv variants of the
same launch, so the differences are what the parts cost): the root bridge's pids cgroup (joined
while bwrap waits at the gate, so its ~10 ms overlap bwrap's setup) and the placeholders; and,
alone, a shell joining a fresh pids cgroup against one that does not: what the join would cost
in front of bwrap.

    .venv/bin/python bench/bench_sandbox.py [--runs 10] [--no-npx] [--only npx]

Prints medians and spreads; asserts nothing (the target is at most +10 ms over the old sandbox).
Works in a throwaway tree under /var/tmp with a fake HOME.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from anyio.from_thread import BlockingPortal, start_blocking_portal

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sandbox import FilteringProxy, Gate, Launch, SandboxConfig, finish_launch, prepare_launch  # noqa: E402
from sandbox.bubblewrap import bwrap_argv  # noqa: E402
from sandbox.command import resolve_command  # noqa: E402
from sandbox.homes import EMPTY_DIR, EMPTY_FILE  # noqa: E402
from sandbox.leftovers import pids_cgroup_base  # noqa: E402
from sandbox.network import NetworkSetting  # noqa: E402

TINY = REPO / "tests" / "servers" / "tiny_stdio.py"
NPX_PACKAGE = "@modelcontextprotocol/server-everything"
_cgroup_ids = itertools.count()
INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "0"}},
}) + "\n"  # fmt: skip


def time_to_initialize(argv: list[str], env: dict[str, str], cwd: str, gate: Gate | None = None) -> float:
    """Milliseconds from spawn to the first line the server writes in answer to `initialize`
    (a gated launch let go as the bridge does: after the spawn, before the first write)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        pass_fds=gate.child_fds if gate else (),
    )  # fmt: skip
    if gate is not None:
        gate.release(proc.pid)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE.encode())
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = (time.perf_counter() - start) * 1000
    proc.kill()
    proc.wait()
    if not line.startswith(b"{"):
        raise RuntimeError(f"{argv[-3:]} did not answer initialize")
    return elapsed


def old_argv(launch: Launch, argv: list[str]) -> list[str]:
    """The v1 shape of the same launch: no hidden home, placeholders, seccomp or limits."""
    assert launch.policy is not None
    old = dataclasses.replace(
        launch.policy, home=None, hidden=(), exposed=(), placeholders=(), network="deny",
        proxy_socket=None, allowed_hosts=(),
    )  # fmt: skip
    return bwrap_argv(old, argv, cwd=Path(launch.cwd))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-npx", action="store_true")
    parser.add_argument("--only", default="", help="run only the servers whose name holds this text")
    options = parser.parse_args()
    logging.getLogger("mcp_bridge.sandbox").setLevel(logging.ERROR)  # `none` warns on every spawn

    root = Path(tempfile.mkdtemp(prefix="mcp-bench-", dir="/var/tmp"))
    home, ws, state, homes = root / "home", root / "ws", root / "state", root / "homes"
    for path in (home, ws, state):
        path.mkdir()
    os.environ["HOME"] = str(home)
    config = SandboxConfig(backend="bubblewrap", workspace=ws, state_dir=state, network="deny", homes_dir=homes,
                           proxy_dir=Path(f"/tmp/mcp-bench-{os.getpid()}"))  # fmt: skip
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    npm_cache = root / "npm-cache"  # one warm cache for every variant, writable by each
    npm_cache.mkdir()
    shared = {"npm_config_cache": str(npm_cache), "npm_config_prefer_offline": "true"}
    cache_root = (str(npm_cache),)  # a second writable root: 17 more placeholders
    servers: dict[str, tuple[str, list[str], tuple[str, ...]]] = {
        "python tiny, the workspace writable (17 placeholders)": (python, ["-I", str(TINY)], ()),
        "python tiny, plus one write path (34 placeholders)": (python, ["-I", str(TINY)], cache_root),
    }
    if not options.no_npx and shutil.which("npx"):
        servers["npx everything (warm), its cache a write path"] = ("npx", ["-y", NPX_PACKAGE], cache_root)
    proxy = FilteringProxy()
    try:
        with start_blocking_portal() as portal:
            task, _ = portal.start_task(proxy.serve)
            try:
                for name, (command, args, write_paths) in servers.items():
                    if options.only not in name:
                        continue
                    variants = variants_for(config, command, args, write_paths, shared, portal, proxy)
                    variants["new sandbox"]()  # warm: the npx cache, the page cache, the chain cache
                    samples: dict[str, list[float]] = {v: [] for v in variants}
                    for _ in range(options.runs):
                        for variant, run in variants.items():  # interleaved, so drift hits all
                            samples[variant].append(run())
                    report(name, samples)
                    print(f"  prepare_launch + finish_launch (new, not in the above): {prepare_cost(config, command, args, write_paths, shared):.1f} ms")
            finally:
                task.cancel()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(config.proxy_dir or "", ignore_errors=True)
    return 0


def variants_for(
    config: SandboxConfig, command: str, args: list[str], write_paths: tuple[str, ...], shared: dict[str, str],
    portal: BlockingPortal, proxy: FilteringProxy,
) -> dict[str, Callable[[], float]]:
    def new(network: NetworkSetting | None = None) -> float:
        launch = prepare_launch(command, args, cwd=config.workspace, server_env=shared, network=network,
                                write_paths=write_paths, config=config, server_name="bench")  # fmt: skip
        if launch.proxy is not None:
            portal.call(proxy.listen, launch.proxy)
        try:
            return time_to_initialize([launch.command, *launch.args], launch.env, launch.cwd, launch.gate)
        finally:
            finish_launch(launch)

    def old() -> float:
        launch = prepare_launch(command, args, cwd=config.workspace, server_env=shared, network="deny",
                                write_paths=write_paths, config=config, server_name="bench")  # fmt: skip
        try:
            env = launch.env | {"HOME": os.environ["HOME"]}
            argv = [resolve_command(command, path_env=launch.env["PATH"]), *args]
            return time_to_initialize(old_argv(launch, argv), env, launch.cwd)
        finally:
            finish_launch(launch)

    def none() -> float:
        launch = prepare_launch(command, args, cwd=config.workspace, server_env=shared, network=None,
                                write_paths=(), config=dataclasses.replace(config, backend="none"))  # fmt: skip
        return time_to_initialize([launch.command, *launch.args], launch.env, launch.cwd)

    def part(strip: Callable[[list[str]], list[str]]) -> Callable[[], float]:
        """The deny launch without the pids cgroup, its argv further stripped."""
        def run() -> float:
            launch = prepare_launch(command, args, cwd=config.workspace, server_env=shared, network="deny",
                                    write_paths=write_paths, config=dataclasses.replace(config, pids_cgroup=False),
                                    server_name="bench")  # fmt: skip
            try:
                return time_to_initialize(strip([launch.command, *launch.args]), launch.env, launch.cwd, launch.gate)
            finally:
                finish_launch(launch)
        return run

    variants = {
        "none": none, "old sandbox": old, "new, deny": lambda: new("deny"), "new sandbox": new,
        "deny - cgroup": part(lambda argv: argv),
        "deny - cgroup - placeholders": part(without_placeholders),
    }  # fmt: skip
    if os.geteuid() == 0 and (base := pids_cgroup_base()) is not None:
        variants["sh joining a pids cgroup"] = lambda: join_cgroup(base, True)
        variants["sh not joining one"] = lambda: join_cgroup(base, False)
    return variants


def without_placeholders(argv: list[str]) -> list[str]:
    """The argv without the `--ro-bind <homes>/.empty[-dir] PATH` placeholder mounts."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--ro-bind" and Path(argv[i + 1]).name in (EMPTY_FILE, EMPTY_DIR):
            i += 3
            continue
        out.append(argv[i])
        i += 1
    return out


def join_cgroup(base: Path, join: bool) -> float:
    """Milliseconds for a `/bin/sh` to start, make a pids cgroup and (with `join`) move into it."""
    cgroup = base / f"mcp-bench-{os.getpid()}-{next(_cgroup_ids)}"
    script = 'mkdir "$1" && echo 512 > "$1/pids.max"' + (' && echo $$ > "$1/cgroup.procs"' if join else "")
    start = time.perf_counter()
    subprocess.run(["/bin/sh", "-c", script, "sh", str(cgroup)], check=True)
    elapsed = (time.perf_counter() - start) * 1000
    cgroup.rmdir()
    return elapsed


def prepare_cost(
    config: SandboxConfig, command: str, args: list[str], write_paths: tuple[str, ...], shared: dict[str, str]
) -> float:
    """Median ms of the bridge-side work of one new launch: policy, home, files, placeholders."""
    times = []
    for _ in range(20):
        start = time.perf_counter()
        launch = prepare_launch(command, args, cwd=config.workspace, server_env=shared, network=None,
                                write_paths=write_paths, config=config, server_name="bench")  # fmt: skip
        finish_launch(launch)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def report(name: str, samples: dict[str, list[float]]) -> None:
    medians = {v: statistics.median(s) for v, s in samples.items()}
    print(f"\n{name}: spawn to initialize answered, median of {len(samples['none'])} (min-max), ms")
    for variant, values in samples.items():
        print(f"  {variant:30} {medians[variant]:8.1f}  ({min(values):.1f}-{max(values):.1f})")
    for variant in ("new sandbox", "new, deny", "deny - cgroup", "deny - cgroup - placeholders"):
        paired = statistics.median(n - o for n, o in zip(samples[variant], samples["old sandbox"], strict=True))
        print(f"  {variant} - old: {medians[variant] - medians['old sandbox']:+.1f}  (median of the paired differences: {paired:+.1f})")
    print(f"  pids cgroup:  {medians['new, deny'] - medians['deny - cgroup']:+.1f}", end="")
    if "sh joining a pids cgroup" in medians:
        print(f"  (a shell joining one alone: {medians['sh joining a pids cgroup'] - medians['sh not joining one']:+.1f})", end="")
    print(f"\n  placeholders: {medians['deny - cgroup'] - medians['deny - cgroup - placeholders']:+.1f}")


if __name__ == "__main__":
    sys.exit(main())
