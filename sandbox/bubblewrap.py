"""Linux: render a `Policy` and an argv into a `bwrap` argv. Pure: looks at nothing on disk.

What the child gets:
- every namespace unshared (network too unless the policy allows it), no capabilities, no nested
  user namespaces, uid 65534 when the bridge runs as root, its own session (no TIOCSTI), and it
  dies with the bridge;
- the host filesystem read-only, a fresh /dev and /proc (the bridge's /proc/<pid>/environ is out of
  reach), and private tmpfs on /tmp and /run (host sockets: ssh-agent, docker, D-Bus);
- write access only to the workspace and the capability write roots;
- protected paths in the workspace read-only, secrets masked (dirs: empty, mode 0000, read-only
  tmpfs; files: /dev/null).

Mount order matters because a later mount covers an earlier one at the same or a parent path:
`/` first, then the private /tmp and /run (so write roots under /tmp still show through), then the
writable binds, then the pins and read-only protected paths, and the secret masks last, so that a
secret inside a write root (the bridge's state dir inside the workspace) stays hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sandbox.policy import Policy

BWRAP = "/usr/bin/bwrap"
NOBODY = "65534"
TMP_BYTES = 1 << 30
PRIVATE_MOUNTS = (Path("/tmp"), Path("/run"))


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
    args += ["--remount-ro", "/run"]
    return args


def write_mount_args(policy: Policy) -> list[str]:
    args: list[str] = []
    for root in (policy.workspace, *policy.write_roots):
        args += ["--bind", str(root), str(root)]  # writable roots
    for pin in policy.pinned:
        args += ["--bind", str(pin), str(pin)]  # a mount point cannot be renamed (EBUSY)
    for path in policy.protected:
        args += ["--ro-bind", str(path), str(path)]  # run later by the host: read-only
    return args


def mask_args(policy: Policy) -> list[str]:
    args: list[str] = []
    roots = (policy.workspace, *policy.write_roots)
    for mask in policy.masks:
        path = str(mask.path)
        if _privately_hidden(mask.path, roots):
            continue  # the host path is not visible (and /run is read-only for the mount point)
        if mask.kind == "dir":  # a bare --tmpfs would be writable
            args += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
        elif mask.kind == "file":  # nodev bind: reads fail with EACCES
            args += ["--ro-bind", "/dev/null", path]
        # absent: nothing to hide, and a mount would create the path on the host
    return args


def _privately_hidden(path: Path, roots: tuple[Path, ...]) -> bool:
    in_private = any(path.is_relative_to(p) for p in PRIVATE_MOUNTS)
    return in_private and not any(path.is_relative_to(root) for root in roots)


def bwrap_argv(policy: Policy, argv: Sequence[str], *, cwd: Path, bwrap: str = BWRAP) -> list[str]:
    """The full argv: `bwrap`, its flags in mount order, `--`, then the child's absolute argv."""
    return [
        bwrap,
        *namespace_args(as_root=policy.as_root, allow_network=policy.network == "allow"),
        *system_mount_args(policy.run_binds),
        *write_mount_args(policy),
        *mask_args(policy),
        "--chdir", str(cwd),
        "--", *argv,
    ]  # fmt: skip
