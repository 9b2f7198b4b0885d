"""Placeholders (and a root bridge's pids cgroups) a bridge killed with SIGKILL left behind go at the
next bridge's start, and only those.

Real `mcp-bridge` processes, each running the forking fixture (it never answers, so the child is
still running when its bridge is killed). The sweep must remove only what a dead bridge made, never
a user's own empty `.vscode` (the positive twin), and never a path a live bridge's child mounts:
removing that mount point would detach the child's read-only mount and let it create the path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sandbox_box import visible_python
from test_escapes_through_bridge import BRIDGE_BIN, FORKING, assert_marker_processes_die, python_pids, wait_for

from bridge_proc import StdioPeer  # tests/ is on sys.path once test_escapes_through_bridge is imported
from sandbox.leftovers import PIDS_CGROUP_ROOTS, pids_cgroup_base

bwrap = pytest.mark.bwrap

MADE = (".idea", ".envrc", ".git", "tool_mcp")  # absent at the spawn: placeholders of both kinds


@dataclass
class Dirs:
    base: Path
    ws: Path
    homes: Path

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ["PATH"], "HOME": str(self.base / "home"), "MCP_WORKSPACE": str(self.ws),
            "MCP_STATE_DIR": str(self.base / "state"), "MCP_HOMES_DIR": str(self.homes), "MCP_TIMEOUT": "300",
        }  # fmt: skip

    def ledgers(self) -> list[Path]:
        return sorted((self.homes / ".placeholders").glob("*.json"))


@pytest.fixture
def dirs() -> Iterator[Dirs]:
    base = Path(tempfile.mkdtemp(prefix="mcp-stale-", dir="/var/tmp"))
    (base / "ws" / ".vscode").mkdir(parents=True)  # the user's own, empty: protected, never swept
    (base / "home").mkdir()
    try:
        yield Dirs(base, base / "ws", base / "homes")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def running_bridge(dirs: Dirs, server: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A bridge process (started, so it has swept); with `server`, one child of it is running."""
    proc = subprocess.Popen(
        [BRIDGE_BIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dirs.env()
    )
    marker = f"mcp-stale-{uuid.uuid4().hex}"
    try:
        peer = StdioPeer(proc)
        peer.handshake()
        if server is not None:
            args = {"name": server, "command": visible_python(), "args_json": json.dumps([FORKING, marker])}
            assert not peer.result("tools/call", {"name": "mcp_add_server", "arguments": args}).get("isError")
            call = {"name": "mcp_call_tool", "arguments": {"server": server, "tool_name": "anything"}}
            peer.send({"jsonrpc": "2.0", "id": 1000, "method": "tools/call", "params": call})
            wait_for(lambda: len(python_pids(marker)) >= 2, 30, f"the child of the bridge serving {server}")
        yield proc
    finally:
        seen = python_pids(marker)
        proc.kill()  # SIGKILL: no cleanup code in the bridge runs
        proc.wait(30)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        assert_marker_processes_die(marker, seen)  # the child's mounts are gone with it


def end_cleanly(bridge: subprocess.Popen[bytes]) -> None:
    """Close its stdin: the bridge shuts down, its child ends and `finish_launch` runs."""
    assert bridge.stdin is not None
    bridge.stdin.close()
    assert bridge.wait(60) == 0


def assert_present(ws: Path, names: tuple[str, ...]) -> None:
    """Each name is there as the empty dir or file a placeholder is."""
    for name in names:
        path = ws / name
        empty = not any(path.iterdir()) if path.is_dir() else path.read_bytes() == b""
        assert empty, name


def cgroups_of(pid: int) -> list[Path]:
    return [path for base in PIDS_CGROUP_ROOTS for path in base.glob(f"mcp-bridge-{pid}-*")]


@bwrap
def test_placeholders_of_a_killed_bridge_go_at_the_next_start_and_the_users_own_empty_dir_stays(dirs: Dirs) -> None:
    with running_bridge(dirs, "forking") as killed:
        assert_present(dirs.ws, MADE)
        assert len(dirs.ledgers()) == 1
    assert_present(dirs.ws, MADE)  # killed: nothing removed them
    assert bool(cgroups_of(killed.pid)) == (os.geteuid() == 0 and pids_cgroup_base() is not None)
    (dirs.ws / "own").write_bytes(b"")
    (dirs.ws / "own").replace(dirs.ws / ".env")  # the user's own empty .env where a placeholder was
    with running_bridge(dirs):
        assert [name for name in MADE if (dirs.ws / name).exists()] == []
        assert (dirs.ws / ".vscode").is_dir()  # the twins: as empty as placeholders, but the user's
        assert (dirs.ws / ".env").read_bytes() == b""
        assert dirs.ledgers() == []
        assert cgroups_of(killed.pid) == []


@bwrap
def test_a_sweep_leaves_what_a_live_bridges_child_mounts_until_that_bridge_is_gone_too(dirs: Dirs) -> None:
    with ExitStack() as first_alive:
        first_alive.enter_context(running_bridge(dirs, "first"))
        with running_bridge(dirs):
            assert_present(dirs.ws, MADE)  # its bridge is alive: not stale
        # A second bridge's child finds them present: it mounts them read-only, as protected paths.
        second = running_bridge(dirs, "second")
        with second:
            first_alive.close()  # the first bridge dies; its placeholders are mounted by the second's child
            with running_bridge(dirs):
                assert_present(dirs.ws, MADE)  # removing them would detach the second child's mounts
    with running_bridge(dirs):
        assert [name for name in MADE if (dirs.ws / name).exists()] == []
        assert (dirs.ws / ".vscode").is_dir()


@bwrap
def test_a_bridge_ending_cleanly_keeps_its_placeholders_while_another_bridges_child_mounts_them(dirs: Dirs) -> None:
    with running_bridge(dirs, "first") as first:
        with running_bridge(dirs, "second"):  # its child mounts the first's placeholders as present paths
            end_cleanly(first)
            assert_present(dirs.ws, MADE)  # removing them would detach the second child's mounts
    with running_bridge(dirs):  # both gone: the first's ledger kept them for this sweep
        assert [name for name in MADE if (dirs.ws / name).exists()] == []
        assert (dirs.ws / ".vscode").is_dir()


@bwrap
def test_a_bridge_whose_child_ends_removes_what_a_bridge_that_ended_before_it_could_not(dirs: Dirs) -> None:
    """Nothing stays in the workspace once both bridges ended cleanly, with no third bridge to sweep."""
    with running_bridge(dirs, "first") as first, running_bridge(dirs, "second") as second:
        end_cleanly(first)
        assert_present(dirs.ws, MADE)  # the second's child still mounts them
        end_cleanly(second)
        assert [name for name in MADE if (dirs.ws / name).exists()] == []
        assert (dirs.ws / ".vscode").is_dir()  # the twin: the user's own empty dir stays
        assert dirs.ledgers() == []
