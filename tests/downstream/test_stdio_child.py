"""How the bridge judges a child's death: never take a death it did not cause for one it did."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from bridge_support import MakeBridge, StdioArgs

from bridge.downstream.framing import PipeReader, PipeWriter
from bridge.downstream.stdio import Child


def sleeper() -> Child:
    """`sleep 30` in a session of its own, its stdin, stdout and stderr pipes the test holds, as the bridge spawns."""
    ends = [os.pipe() for _ in range(3)]
    process = subprocess.Popen(
        ["sleep", "30"], stdin=ends[0][0], stdout=ends[1][1], stderr=ends[2][1], start_new_session=True
    )  # fmt: skip
    for fd in (ends[0][0], ends[1][1], ends[2][1]):
        os.close(fd)
    return Child(
        process=process, stdin=PipeWriter(ends[0][1]), stdout=PipeReader(ends[1][0]), stderr=PipeReader(ends[2][0]),
        command="sleep",
    )  # fmt: skip


async def test_a_child_killed_from_outside_before_the_bridge_signals_it_keeps_its_exit_code() -> None:
    """As the OOM killer does it: the child is dead, the bridge has not yet looked, and its
    clean-up SIGKILL follows. Judged before signalling, the death is the child's own (-9)."""
    child = sleeper()
    process = child.process
    os.kill(process.pid, signal.SIGKILL)
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # dead, and not yet reaped
    assert process.returncode is None  # the bridge has not looked yet: the window of the race
    child.signal_group(signal.SIGKILL)
    assert await child.wait_exit(30)
    assert child.exit_code == -signal.SIGKILL


async def test_a_child_the_bridge_stops_has_no_exit_code_of_its_own() -> None:
    child = sleeper()
    child.signal_group(signal.SIGKILL)
    assert await child.wait_exit(30)
    assert child.exit_code is None


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_a_child_inherits_only_its_stdin_stdout_and_stderr(
    make_bridge: MakeBridge, stdio_args: StdioArgs, sandbox: str
) -> None:
    """Nothing of the bridge's reaches a child (its audit file, the host's wire, the gate's pipes),
    sandboxed or not. An event loop's own spawn need not ensure it (uvloop's leaves every
    inheritable descriptor open in the child), so the bridge spawns with `subprocess.Popen`."""
    leak = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leak, True)  # what the bridge's process may hold: inheritable, yet no child's
    try:
        bridge = make_bridge(sandbox=sandbox)
        assert not bridge.add_server("fds", command=sys.executable, args_json=stdio_args("descriptors")).is_error
        reply = bridge.call_tool("fds", "inherited", "{}")
    finally:
        os.close(leak)
    assert not reply.is_error, reply.text
    assert json.loads(reply.data.text) == [0, 1, 2]
