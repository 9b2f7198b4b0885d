"""Hold a bwrap child at its `--block-fd` while the bridge bounds it, then let it run.

bwrap reports its sandbox process on `--info-fd` right after its clone, sets up the mounts, and
only then reads `--block-fd` and forks the command. In between the bridge sets the child's limits
with prlimit(2) (inherited by the command and everything it starts) and, as root, moves the process
into its pids cgroup. The cgroup write waits out an RCU grace period (~10 ms on cgroup v1), which
so overlaps bwrap's own setup instead of delaying the spawn, and no `/bin/sh` or `prlimit` is exec'd
in front of bwrap. The gate also hands bwrap the seccomp program as an open fd.

A gate that fails kills the held process before bwrap could read anything: an unbounded child
never runs. Each fd is closed once, by `spawned` (the child's ends) or `close` (the rest).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.limits import Limits

INFO_TIMEOUT_S = 10.0  # bwrap writes its info right after the clone; this only bounds a stuck bwrap
INFO_MAX_BYTES = 4096


class GateFailed(OSError):
    """The child could not be bounded before it ran (it was killed); `strerror` says why."""


@dataclass
class Gate:
    """The fds of one held launch and what to apply to it. Made by `open_gate`."""

    seccomp_fd: int
    info_read: int
    info_write: int
    block_read: int
    block_write: int
    limits: Limits
    cgroup: Path | None = None
    _closed: set[int] = field(default_factory=set)

    @property
    def child_fds(self) -> tuple[int, int, int]:
        """What the spawn passes to bwrap (`pass_fds`): seccomp, info and block."""
        return (self.seccomp_fd, self.info_write, self.block_read)

    @property
    def bwrap_fds(self) -> tuple[int, int]:
        """bwrap's `--info-fd` and `--block-fd`."""
        return (self.info_write, self.block_read)

    def spawned(self) -> None:
        """Close the ends bwrap now holds, so its exit reads as EOF here."""
        for fd in self.child_fds:
            self._close(fd)

    def release(self, pid_of_spawn: int) -> None:
        """Bound the held sandbox process and let it run; blocks (~10 ms as root): call in a thread.

        A bwrap that exits on its own meanwhile (a bad argument, a failed mount) leaves nothing to
        bound: this returns, and the spawn's own exit says what happened. Raises `GateFailed`, having
        killed the held process and the spawn, when a bound cannot be set.
        """
        self.spawned()
        held: int | None = None
        try:
            held = _read_child_pid(self.info_read)
            if held is None:
                return
            _apply_limits(held, self.limits)
            if self.cgroup is not None:
                (self.cgroup / "cgroup.procs").write_text(f"{held}\n")
            os.write(self.block_write, b"1")
        except (ProcessLookupError, BrokenPipeError):
            return  # bwrap's sandbox process exited before it was let go
        except OSError as exc:
            for pid in (held, pid_of_spawn):
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            if isinstance(exc, GateFailed):
                raise
            raise GateFailed(exc.errno, f"cannot bound the sandboxed child: {exc.strerror or exc}") from None
        finally:
            self.close()

    def close(self) -> None:
        """Close every fd still open (idempotent): a launch never spawned, or one released."""
        for fd in (*self.child_fds, self.info_read, self.block_write):
            self._close(fd)

    def _close(self, fd: int) -> None:
        if fd not in self._closed:
            self._closed.add(fd)
            os.close(fd)


def open_gate(seccomp_program: Path, limits: Limits, cgroup: Path | None) -> Gate:
    """Open the seccomp program and the two pipes; `cgroup` must exist (its `pids.max` set)."""
    seccomp_fd = os.open(seccomp_program, os.O_RDONLY | os.O_CLOEXEC)
    info_read, info_write = os.pipe()
    block_read, block_write = os.pipe()
    return Gate(seccomp_fd, info_read, info_write, block_read, block_write, limits, cgroup)


def _read_child_pid(fd: int) -> int | None:
    """bwrap's `{"child-pid": N, ...}`, or None when it exited before writing it."""
    data = b""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not data.rstrip().endswith(b"}"):
        if not poller.poll(INFO_TIMEOUT_S * 1000):
            raise GateFailed(0, f"bwrap did not report its sandbox process within {INFO_TIMEOUT_S:.0f} s")
        chunk = os.read(fd, INFO_MAX_BYTES)
        if not chunk:
            return None
        data += chunk
        if len(data) > INFO_MAX_BYTES:
            raise GateFailed(0, "bwrap's --info-fd output is not what bwrap writes")
    try:
        pid = json.loads(data).get("child-pid")
    except (ValueError, AttributeError):
        pid = None
    if not isinstance(pid, int):
        raise GateFailed(0, "bwrap's --info-fd output names no child-pid")
    return pid


def _apply_limits(pid: int, limits: Limits) -> None:
    """Soft and hard limit for each bound, never above the hard limit the process already has
    (raising one needs a privilege the bridge may not have)."""
    for kind, value in limits.rlimits():
        _, hard = resource.prlimit(pid, kind)
        bound = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.prlimit(pid, kind, (bound, bound))
