"""The exact bwrap argv for representative policies. The renderer is pure: no path here exists."""

from __future__ import annotations

from pathlib import Path

from sandbox.bubblewrap import bwrap_argv
from sandbox.policy import Mask, Policy

WS = Path("/srv/ws")
HOME = Path("/home/alice")
ISOLATION = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
             "--new-session", "--cap-drop", "ALL"]  # fmt: skip
SYSTEM = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--size", "1073741824",
          "--tmpfs", "/tmp", "--tmpfs", "/run"]  # fmt: skip


def test_non_root_network_deny() -> None:
    policy = Policy(
        workspace=WS,
        masks=(
            Mask(HOME / ".ssh", "dir"),
            Mask(HOME / ".netrc", "file"),
            Mask(HOME / ".aws", "absent"),
        ),
    )
    assert bwrap_argv(policy, ["/usr/bin/python3", "-I", "server.py"], cwd=WS / "sub") == [
        "/usr/bin/bwrap",
        *ISOLATION,
        *SYSTEM, "--remount-ro", "/run",
        "--bind", "/srv/ws", "/srv/ws",
        "--perms", "0000", "--tmpfs", "/home/alice/.ssh", "--remount-ro", "/home/alice/.ssh",
        "--ro-bind", "/dev/null", "/home/alice/.netrc",
        "--chdir", "/srv/ws/sub",
        "--", "/usr/bin/python3", "-I", "server.py",
    ]  # fmt: skip


def test_root_network_allow_with_capability_roots_and_protected_paths() -> None:
    policy = Policy(
        workspace=WS,
        write_roots=(Path("/var/cache/npm"),),
        masks=(Mask(Path("/etc/shadow"), "file"), Mask(Path("/root"), "dir")),
        protected=(WS / ".git/hooks", WS / ".git/config", WS / ".vscode"),
        pinned=(WS / ".git",),
        network="allow",
        as_root=True,
        run_binds=(Path("/run/systemd/resolve/stub-resolv.conf"),),
    )
    assert bwrap_argv(policy, ["/usr/bin/node", "srv.js"], cwd=WS, bwrap="/opt/bin/bwrap") == [
        "/opt/bin/bwrap",
        *ISOLATION, "--uid", "65534", "--gid", "65534", "--share-net",
        *SYSTEM,
        "--ro-bind", "/run/systemd/resolve/stub-resolv.conf", "/run/systemd/resolve/stub-resolv.conf",
        "--remount-ro", "/run",
        "--bind", "/srv/ws", "/srv/ws",
        "--bind", "/var/cache/npm", "/var/cache/npm",
        "--bind", "/srv/ws/.git", "/srv/ws/.git",
        "--ro-bind", "/srv/ws/.git/hooks", "/srv/ws/.git/hooks",
        "--ro-bind", "/srv/ws/.git/config", "/srv/ws/.git/config",
        "--ro-bind", "/srv/ws/.vscode", "/srv/ws/.vscode",
        "--ro-bind", "/dev/null", "/etc/shadow",
        "--perms", "0000", "--tmpfs", "/root", "--remount-ro", "/root",
        "--chdir", "/srv/ws",
        "--", "/usr/bin/node", "srv.js",
    ]  # fmt: skip


def test_state_dir_inside_workspace_is_masked_after_the_workspace_bind() -> None:
    state = WS / "var" / "work"
    policy = Policy(
        workspace=WS,
        masks=(Mask(state, "dir"), Mask(Path("/tmp/hidden-anyway"), "dir")),
        pinned=(WS / "var",),
    )
    assert bwrap_argv(policy, ["/bin/srv"], cwd=WS) == [
        "/usr/bin/bwrap",
        *ISOLATION,
        *SYSTEM, "--remount-ro", "/run",
        "--bind", "/srv/ws", "/srv/ws",
        "--bind", "/srv/ws/var", "/srv/ws/var",
        "--perms", "0000", "--tmpfs", "/srv/ws/var/work", "--remount-ro", "/srv/ws/var/work",
        "--chdir", "/srv/ws",
        "--", "/bin/srv",
    ]  # fmt: skip


def test_mask_under_tmp_is_kept_when_a_write_root_lives_there() -> None:
    ws = Path("/tmp/ws")
    policy = Policy(workspace=ws, masks=(Mask(ws / "work", "dir"),))
    argv = bwrap_argv(policy, ["/bin/srv"], cwd=ws)
    assert argv[argv.index("--bind"):argv.index("--chdir")] == [
        "--bind", "/tmp/ws", "/tmp/ws",
        "--perms", "0000", "--tmpfs", "/tmp/ws/work", "--remount-ro", "/tmp/ws/work",
    ]  # fmt: skip
