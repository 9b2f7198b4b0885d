"""The gate: bwrap holds the child until the bridge has bounded it, and a child it cannot bound never runs."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import subprocess
import time
from pathlib import Path

import pytest
from sandbox_box import Box, spawn

from sandbox import GateFailed, Limits, finish_launch
from sandbox.gate import open_gate

MIB = 1 << 20
SHOW_LIMITS = (
    "import json, resource, sys\n"
    "names = ('AS', 'NPROC', 'FSIZE', 'NOFILE')\n"
    "print(json.dumps({n: resource.getrlimit(getattr(resource, 'RLIMIT_' + n)) for n in names}))\n"
    "print(open('/proc/self/cgroup').read(), file=sys.stderr)\n"
)
LIMITS = Limits(memory_bytes=1024 * MIB, processes=64, file_bytes=8 * MIB, open_files=256)


def shown_limits(box: Box, limits: Limits) -> tuple[dict[str, list[int]], str]:
    proc = box.run(box.launch(box.python, ["-I", "-c", SHOW_LIMITS], limits=limits))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.bwrap
def test_the_command_starts_with_its_limits_already_set(box: Box) -> None:
    shown, _ = shown_limits(box, LIMITS)
    assert shown == {"AS": [1024 * MIB] * 2, "NPROC": [64] * 2, "FSIZE": [8 * MIB] * 2, "NOFILE": [256] * 2}


@pytest.mark.bwrap
def test_limits_turned_off_leave_what_the_bridge_has(box: Box) -> None:
    shown, _ = shown_limits(box, Limits(memory_bytes=None, processes=None, file_bytes=None, open_files=None))
    assert shown["AS"] == list(resource.getrlimit(resource.RLIMIT_AS))
    assert shown["FSIZE"] == list(resource.getrlimit(resource.RLIMIT_FSIZE))


@pytest.mark.bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="only a root bridge bounds processes with a pids cgroup")
def test_a_root_bridges_child_runs_in_its_own_pids_cgroup(box: Box) -> None:
    _, cgroups = shown_limits(box, LIMITS)
    pids = next(line for line in cgroups.splitlines() if ":pids:" in line or line.startswith("0::"))
    assert f"/mcp-bridge-{os.getpid()}-" in pids


def held_at_the_gate(bwrap_pid: int, timeout: float = 10) -> int:
    """bwrap's sandbox process once it waits on `--block-fd` (asleep in a pipe read, no child yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        children = Path(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children").read_text().split()
        if children:
            held = int(children[0])
            asleep_in_pipe = "pipe_read" in Path(f"/proc/{held}/wchan").read_text()
            if asleep_in_pipe and not Path(f"/proc/{held}/task/{held}/children").read_text().strip():
                return held
        time.sleep(0.01)
    raise AssertionError("bwrap's sandbox process never waited at the gate")


@pytest.mark.bwrap
def test_the_child_is_held_until_the_gate_lets_it_go(box: Box) -> None:
    marker = box.ws / "ran"
    launch = box.launch("/bin/sh", ["-c", f"touch {marker}"])
    assert launch.gate is not None
    try:
        proc = spawn(launch, release=False)
        held_at_the_gate(proc.pid)
        assert not marker.exists()
        launch.gate.release(proc.pid)
        assert proc.wait(timeout=10) == 0
    finally:
        finish_launch(launch)
    assert marker.exists()


@pytest.mark.bwrap
def test_a_child_the_gate_cannot_bound_never_runs(box: Box) -> None:
    marker = box.ws / "ran"
    launch = box.launch("/bin/sh", ["-c", f"touch {marker}"])
    assert launch.gate is not None
    broken = dataclasses.replace(launch.gate, cgroup=box.root / "no-such-cgroup")  # its write fails
    try:
        proc = spawn(launch, release=False)
        with pytest.raises(GateFailed, match="cannot bound the sandboxed child"):
            broken.release(proc.pid)
        assert proc.wait(timeout=10) != 0
    finally:
        launch.gate.close()
        finish_launch(launch)
    assert not marker.exists()


@pytest.mark.bwrap
def test_the_same_child_let_go_runs(box: Box) -> None:
    marker = box.ws / "ran"
    launch = box.launch("/bin/sh", ["-c", f"touch {marker}"])
    try:
        assert spawn(launch).wait(timeout=10) == 0
    finally:
        finish_launch(launch)
    assert marker.exists()


@pytest.mark.bwrap
def test_a_bwrap_that_exits_before_reporting_leaves_nothing_to_bound(box: Box, tmp_path: Path) -> None:
    seccomp = tmp_path / "empty.bpf"
    seccomp.write_bytes(b"")
    gate = open_gate(seccomp, Limits(), None)
    info, block = gate.bwrap_fds
    argv = ["/usr/bin/bwrap", "--info-fd", str(info), "--block-fd", str(block), "--no-such-option"]
    proc = subprocess.Popen(argv, pass_fds=gate.child_fds, stderr=subprocess.PIPE, text=True)
    gate.release(proc.pid)  # EOF on the info pipe: returns, and the exit says what happened
    assert proc.wait(timeout=10) != 0
    assert "no-such-option" in (proc.stderr.read() if proc.stderr else "")
