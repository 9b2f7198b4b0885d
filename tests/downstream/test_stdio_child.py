"""How the bridge judges a child's death: never take a death it did not cause for one it did."""

from __future__ import annotations

import os
import signal

import anyio

from bridge.downstream.framing import PipeReader, PipeWriter
from bridge.downstream.stdio import Child


async def sleeper() -> Child:
    """`sleep 30` in a session of its own, its stdin and stdout pipes the test holds, as the bridge spawns."""
    stdin, to_child = os.pipe()
    from_child, stdout = os.pipe()
    try:
        process = await anyio.open_process(["sleep", "30"], stdin=stdin, stdout=stdout, start_new_session=True)
    finally:
        os.close(stdin)
        os.close(stdout)
    return Child(process=process, stdin=PipeWriter(to_child), stdout=PipeReader(from_child), command="sleep")


async def test_a_child_killed_from_outside_before_the_bridge_signals_it_keeps_its_exit_code() -> None:
    """As the OOM killer does it: the child is dead, the loop has not yet seen it, and the bridge's
    clean-up SIGKILL follows. Judged before signalling, the death is the child's own (-9)."""
    child = await sleeper()
    process = child.process
    os.kill(process.pid, signal.SIGKILL)
    try:  # block until it is dead, without yielding to the loop (whose watcher would record it)
        os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:  # the watcher's thread reaped it first: dead all the same
        pass
    assert process.returncode is None  # the loop has not seen the death yet: the window of the race
    child.signal_group(signal.SIGKILL)
    assert await child.wait_exit(30)
    assert child.exit_code == -signal.SIGKILL


async def test_a_child_the_bridge_stops_has_no_exit_code_of_its_own() -> None:
    child = await sleeper()
    child.signal_group(signal.SIGKILL)
    assert await child.wait_exit(30)
    assert child.exit_code is None
