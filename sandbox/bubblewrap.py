"""Linux: render a `Policy` and an argv into a `bwrap` argv. Pure: looks at nothing on disk.

What the child gets:
- every namespace unshared (network too unless the policy allows it), no capabilities, no nested
  user namespaces, uid 65534 when the bridge runs as root, its own session (no TIOCSTI), and it
  dies with the bridge;
- the host filesystem read-only, a fresh /dev and /proc (the bridge's /proc/<pid>/environ is out of
  reach), and private tmpfs on /tmp and /run (host sockets: ssh-agent, docker, D-Bus);
- the real home and the other servers' homes replaced by an empty tmpfs, with the command's
  install trees, tool folders and read paths bound back read-only;
- write access only to the workspace, the private home and the capability write roots;
- git dirs and config paths in writable roots read-only (absent ones held by an empty read-only
  mount point), secrets masked (dirs: empty, mode 0000, read-only tmpfs; files: /dev/null);
- a seccomp filter refusing AF_UNIX sockets and io_uring; given `info_fd` and `block_fd`, bwrap
  waits after its setup while the bridge sets the per-child limits (`gate.py`);
- with a `proxy` network: no network but loopback, where `forwarder.py` listens and relays to the
  bridge's filtering proxy through one Unix socket bound in at `/run/mcp-bridge/proxy.sock`; the
  forwarder is the box's pid 1 (`--as-pid-1`: no unfiltered bwrap init beside it) and makes itself
  non-dumpable, so the command cannot borrow its unfiltered AF_UNIX sockets. Otherwise bwrap's
  pid 1 runs under the same filter as the command.

Mount order: a later mount covers an earlier one at the same or a parent path, so after the fixed
system mounts every mount is emitted parents first (by depth). A deeper rule therefore always wins:
the workspace shows through the hidden home, a git dir stays read-only inside the workspace, a
secret inside a write root stays masked. Read-only remounts of tmpfs mounts come last, once every
mount point inside them exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox.policy import PRIVATE_MOUNTS, Policy, within

BWRAP = "/usr/bin/bwrap"
NOBODY = "65534"
TMP_BYTES = 1 << 30
PROXY_PORT = 3128  # inside the sandbox's own network namespace, where nothing else listens
SANDBOX_RUN = Path("/run/mcp-bridge")
SANDBOX_SOCKET = SANDBOX_RUN / "proxy.sock"
SANDBOX_FORWARDER = SANDBOX_RUN / "forwarder.py"


@dataclass(frozen=True)
class Forwarder:
    """How to start `forwarder.py` in the sandbox: a visible python and the script's host path."""

    python: str
    script: Path


def namespace_args(*, as_root: bool, allow_network: bool) -> list[str]:
    """Isolation flags shared by every launch and by the availability probe."""
    args = [
        "--unshare-all",  # user(-try), ipc, pid, net, uts, cgroup(-try)
        "--unshare-user", "--disable-userns",  # always a user ns, and no nested ones inside
        "--die-with-parent",  # the child dies when the bridge (or its timeout kill) ends bwrap
        "--new-session",  # no TIOCSTI injection into a terminal (CVE-2017-5226)
        "--cap-drop", "ALL",  # as root, keeping caps lets `mount -o remount,rw /` reach the host
    ]  # fmt: skip
    if as_root:
        args += ["--uid", NOBODY, "--gid", NOBODY]  # not "root" inside
    if allow_network:
        args.append("--share-net")
    return args


def system_mount_args(run_binds: tuple[Path, ...] = ()) -> list[str]:
    """Read-only host, fresh /dev and /proc, private /tmp and /run (`run_binds` shown through)."""
    args = ["--ro-bind", "/", "/"]  # broad read, nothing writable yet
    args += ["--dev", "/dev"]  # minimal devices: null, zero, random, tty, pts, shm
    args += ["--proc", "/proc"]  # this pid namespace only
    args += ["--size", str(TMP_BYTES), "--tmpfs", "/tmp"]  # private and capped; the child's TMPDIR
    args += ["--tmpfs", "/run"]  # hides docker.sock, the user bus, nscd
    for path in run_binds:
        args += ["--ro-bind", str(path), str(path)]  # the file resolv.conf points at
    return args


def _mounts(policy: Policy, forwarder: Forwarder | None) -> list[tuple[Path, list[str]]]:
    """(path, flags) for every mount after the system ones, in policy order (sorted later)."""
    ops: list[tuple[Path, list[str]]] = []
    if policy.proxy_socket is not None and forwarder is not None:
        ops.append((SANDBOX_SOCKET, ["--bind", str(policy.proxy_socket), str(SANDBOX_SOCKET)]))
        ops.append((SANDBOX_FORWARDER, ["--ro-bind", str(forwarder.script), str(SANDBOX_FORWARDER)]))
    for tree in policy.hidden:
        ops.append((tree, ["--tmpfs", str(tree)]))  # the real home and other servers' homes: empty
    for tree in policy.exposed:
        ops.append((tree, ["--ro-bind", str(tree), str(tree)]))  # programs, tool folders, read paths
    for root in policy.writable:
        ops.append((root, ["--bind", str(root), str(root)]))  # writable roots
    for pin in policy.pinned:
        ops.append((pin, ["--bind", str(pin), str(pin)]))  # a mount point cannot be renamed (EBUSY)
    for path in (*policy.protected, *policy.own):
        ops.append((path, ["--ro-bind", str(path), str(path)]))  # run later by the host: read-only
    for holder in policy.placeholders:
        source = policy.empty_dir if holder.kind == "dir" else policy.empty_file
        if source is not None:  # empty and read-only; a file reads as "" (a /dev/null bind gives EACCES)
            ops.append((holder.path, ["--ro-bind", str(source), str(holder.path)]))
    shown = (*policy.writable, *policy.exposed)
    for mask in policy.masks:
        path = str(mask.path)
        if _privately_hidden(mask.path, policy.hidden, shown):
            continue  # the host path is not visible (and a read-only tmpfs cannot take a mount point)
        if mask.kind == "dir":  # a bare --tmpfs would be writable
            ops.append((mask.path, ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]))
        elif mask.kind == "file":  # nodev bind: reads fail with EACCES
            ops.append((mask.path, ["--ro-bind", "/dev/null", path]))
        # absent: nothing to hide, and a mount would create the path on the host
    return ops


def _privately_hidden(path: Path, hidden: tuple[Path, ...], shown: tuple[Path, ...]) -> bool:
    in_private = any(within(path, p) for p in (*PRIVATE_MOUNTS, *hidden))
    return in_private and not any(within(path, s) for s in shown)


def mount_args(policy: Policy, forwarder: Forwarder | None = None) -> list[str]:
    """Every mount after the system ones, parents first, then the read-only remounts."""
    ops = sorted(_mounts(policy, forwarder), key=lambda op: len(op[0].parts))  # stable within a depth
    args = [flag for _, flags in ops for flag in flags]
    remounts = [Path("/run"), *policy.hidden]
    for path in remounts:
        args += ["--remount-ro", str(path)]
    return args


def inner_argv(policy: Policy, argv: Sequence[str], *, seccomp_fd: int | None, forwarder: Forwarder | None) -> list[str]:
    """What bwrap runs: the command, behind the forwarder when proxied."""
    command = list(argv)
    if policy.network != "proxy" or forwarder is None:
        return command
    fd = str(seccomp_fd) if seccomp_fd is not None else "-"
    # the forwarder needs AF_UNIX to reach the proxy, so it applies the filter to the command only
    return [forwarder.python, "-I", "-S", str(SANDBOX_FORWARDER), str(SANDBOX_SOCKET), str(PROXY_PORT), fd, "--", *command]


def bwrap_argv(
    policy: Policy,
    argv: Sequence[str],
    *,
    cwd: Path,
    bwrap: str = BWRAP,
    seccomp_fd: int | None = None,
    gate_fds: tuple[int, int] | None = None,
    forwarder: Forwarder | None = None,
) -> list[str]:
    """The full argv: `bwrap`, its flags in mount order, `--`, then the child's absolute argv.

    `gate_fds`: (info, block), bwrap's `--info-fd` and `--block-fd` (see `gate.py`)."""
    proxied = policy.network == "proxy" and forwarder is not None
    seccomp = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None and not proxied else []
    gate = ["--info-fd", str(gate_fds[0]), "--block-fd", str(gate_fds[1])] if gate_fds else []
    # bwrap's own pid 1 would run unfiltered beside the command: the forwarder is pid 1 instead
    as_pid_1 = ["--as-pid-1"] if proxied else []
    return [
        bwrap,
        *gate,
        *namespace_args(as_root=policy.as_root, allow_network=policy.network == "allow"),
        *as_pid_1,
        *system_mount_args(policy.run_binds),
        *mount_args(policy, forwarder),
        *seccomp,
        "--chdir", str(cwd),
        "--", *inner_argv(policy, argv, seccomp_fd=seccomp_fd, forwarder=forwarder),
    ]  # fmt: skip
