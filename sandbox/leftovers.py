"""What outlives a child on the host besides placeholders: a root bridge's pids cgroups, and the
sweep at bridge start of what bridges that died (SIGKILL, OOM) left.

Apart from `launch.py` because none of it is the launch: it is how its leftovers are made, found
and removed. The cgroups are made and swept here together because the sweep trusts their name,
`mcp-bridge-<pid>-<n>`; `pid_alive` is the one test of a bridge's pid (the proxy's socket folders
use it too).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import logging
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.errors import SandboxUnavailable
from sandbox.homes import default_homes_dir, real_home
from sandbox.placeholders import sweep

if TYPE_CHECKING:
    from sandbox.launch import SandboxConfig

log = logging.getLogger("mcp_bridge.sandbox")

CGROUP_REMOVE_TRIES, CGROUP_REMOVE_WAIT_S = 100, 0.01
PIDS_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))  # v1, then v2


@functools.cache
def pids_cgroup_base() -> Path | None:
    """Where this process may make pids cgroups (tried once), or None (logged)."""
    for base in PIDS_CGROUP_ROOTS:
        if not (base / "cgroup.procs").exists():
            continue  # not a cgroup hierarchy (v1 without pids, or no cgroupfs)
        probe = base / f"mcp-bridge-{os.getpid()}-probe"
        try:
            probe.mkdir()
            (probe / "pids.max").write_text("1\n")
        except OSError as exc:
            log.debug("no pids cgroup under %s: %s", base, exc.strerror)
            continue
        finally:
            with contextlib.suppress(OSError):
                probe.rmdir()
        return base
    log.warning("as root the process limit needs a pids cgroup and none could be made: not enforced")
    return None


def make_cgroup(base: Path, processes: int) -> Path:
    """A fresh pids cgroup for one child, bounded to `processes` (the gate moves the child in)."""
    cgroup = base / f"mcp-bridge-{os.getpid()}-{next(_cgroup_ids)}"
    try:
        cgroup.mkdir()
        (cgroup / "pids.max").write_text(f"{processes}\n")
    except OSError as exc:
        with contextlib.suppress(OSError):
            cgroup.rmdir()
        raise SandboxUnavailable(
            f"cannot make the pids cgroup {cgroup} that bounds a root bridge's child: {exc.strerror}; "
            "set MCP_SANDBOX_PIDS_CGROUP=false to go without the process limit"
        ) from None
    return cgroup


def remove_cgroup(path: Path) -> None:
    """Kill what is left in the child's cgroup (the pid namespace dies asynchronously after bwrap)
    and remove it; the kernel refuses while exiting members are not yet reaped, so retry briefly."""
    for _ in range(CGROUP_REMOVE_TRIES):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return  # never spawned, or the spawn failed before making it
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                log.warning("cgroup %s left in place: %s", path, exc.strerror)
                return
        with contextlib.suppress(OSError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        time.sleep(CGROUP_REMOVE_WAIT_S)
    log.warning("cgroup %s left in place: its processes did not exit", path)


def sweep_leftovers(config: SandboxConfig) -> tuple[Path, ...]:
    """At bridge start, what bridges that died (SIGKILL) left; the removed paths.

    The placeholders in writable roots, only those they made, still empty and mounted by no live
    bridge's child; and a root bridge's per-child pids cgroups, only once empty.
    """
    removed = sweep(config.homes_dir or default_homes_dir(dict(os.environ), real_home()))
    return removed + _sweep_cgroups() if os.geteuid() == 0 else removed


def _sweep_cgroups() -> tuple[Path, ...]:
    """Empty `mcp-bridge-<pid>-<n>` cgroups whose bridge pid is gone (rmdir refuses a populated one)."""
    removed = []
    for base in PIDS_CGROUP_ROOTS:
        for path in base.glob("mcp-bridge-*-*"):
            pid = path.name.split("-")[2]
            if not pid.isdigit() or pid_alive(int(pid)):
                continue
            try:
                path.rmdir()
            except OSError as exc:
                log.info("cgroup %s of a bridge that died left in place: %s", path, exc.strerror)
                continue
            removed.append(path)
    return tuple(removed)


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists; one of another user's counts (it cannot be signalled)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


_cgroup_ids = itertools.count()
