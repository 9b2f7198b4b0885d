"""The exact bwrap argv for representative policies. The renderer is pure: no path here exists."""

from __future__ import annotations

from pathlib import Path

from sandbox.bubblewrap import Forwarder, bwrap_argv
from sandbox.policy import Mask, Placeholder, Policy

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
        *SYSTEM,
        "--bind", "/srv/ws", "/srv/ws",
        "--perms", "0000", "--tmpfs", "/home/alice/.ssh", "--remount-ro", "/home/alice/.ssh",
        "--ro-bind", "/dev/null", "/home/alice/.netrc",
        "--remount-ro", "/run",
        "--chdir", "/srv/ws/sub",
        "--", "/usr/bin/python3", "-I", "server.py",
    ]  # fmt: skip


def test_root_network_allow_with_capability_roots_and_protected_paths() -> None:
    policy = Policy(
        workspace=WS,
        write_roots=(Path("/var/cache/npm"),),
        masks=(Mask(Path("/etc/shadow"), "file"), Mask(Path("/root"), "dir")),
        protected=(WS / ".git", WS / "sub" / ".git", WS / ".vscode"),
        pinned=(WS / "sub",),
        network="allow",
        as_root=True,
        run_binds=(Path("/run/systemd/resolve/stub-resolv.conf"),),
    )
    assert bwrap_argv(policy, ["/usr/bin/node", "srv.js"], cwd=WS, bwrap="/opt/bin/bwrap") == [
        "/opt/bin/bwrap",
        *ISOLATION, "--uid", "65534", "--gid", "65534", "--share-net",
        *SYSTEM,
        "--ro-bind", "/run/systemd/resolve/stub-resolv.conf", "/run/systemd/resolve/stub-resolv.conf",
        "--perms", "0000", "--tmpfs", "/root", "--remount-ro", "/root",
        "--bind", "/srv/ws", "/srv/ws",
        "--ro-bind", "/dev/null", "/etc/shadow",
        "--bind", "/var/cache/npm", "/var/cache/npm",
        "--bind", "/srv/ws/sub", "/srv/ws/sub",
        "--ro-bind", "/srv/ws/.git", "/srv/ws/.git",
        "--ro-bind", "/srv/ws/.vscode", "/srv/ws/.vscode",
        "--ro-bind", "/srv/ws/sub/.git", "/srv/ws/sub/.git",
        "--remount-ro", "/run",
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
    argv = bwrap_argv(policy, ["/bin/srv"], cwd=WS)
    assert argv[argv.index("--bind"):argv.index("--chdir")] == [
        "--bind", "/srv/ws", "/srv/ws",
        "--bind", "/srv/ws/var", "/srv/ws/var",
        "--perms", "0000", "--tmpfs", "/srv/ws/var/work", "--remount-ro", "/srv/ws/var/work",
        "--remount-ro", "/run",
    ]  # fmt: skip


def test_mask_under_tmp_is_kept_when_a_write_root_lives_there() -> None:
    ws = Path("/tmp/ws")
    policy = Policy(workspace=ws, masks=(Mask(ws / "work", "dir"),))
    argv = bwrap_argv(policy, ["/bin/srv"], cwd=ws)
    assert argv[argv.index("--bind"):argv.index("--chdir")] == [
        "--bind", "/tmp/ws", "/tmp/ws",
        "--perms", "0000", "--tmpfs", "/tmp/ws/work", "--remount-ro", "/tmp/ws/work",
        "--remount-ro", "/run",
    ]  # fmt: skip


def private_home_policy(**changes: object) -> Policy:
    ws = HOME / "code" / "ws"
    values: dict[str, object] = dict(
        workspace=ws,
        home=Path("/var/lib/homes/srv"),
        hidden=(HOME, Path("/var/lib/homes")),
        exposed=(HOME / ".nvm",),
        masks=(Mask(HOME / ".ssh", "dir"),),
        protected=(ws / ".git",),
        placeholders=(Placeholder(ws / ".vscode", "dir"), Placeholder(ws / ".env", "file")),
        empty_file=Path("/var/lib/homes/.empty"),
        empty_dir=Path("/var/lib/homes/.empty-dir"),
    )
    return Policy(**(values | changes))  # type: ignore[arg-type]


def test_private_home_hides_the_real_home_and_shows_the_workspace_and_programs_through() -> None:
    argv = bwrap_argv(private_home_policy(), ["/usr/bin/node", "srv.js"], cwd=HOME / "code" / "ws", seccomp_fd=3)
    assert argv[argv.index("/run") + 1:argv.index("--chdir")] == [
        "--tmpfs", "/home/alice",
        "--tmpfs", "/var/lib/homes",
        "--ro-bind", "/home/alice/.nvm", "/home/alice/.nvm",
        "--bind", "/home/alice/code/ws", "/home/alice/code/ws",
        "--bind", "/var/lib/homes/srv", "/var/lib/homes/srv",
        "--ro-bind", "/home/alice/code/ws/.git", "/home/alice/code/ws/.git",
        "--ro-bind", "/var/lib/homes/.empty-dir", "/home/alice/code/ws/.vscode",
        "--ro-bind", "/var/lib/homes/.empty", "/home/alice/code/ws/.env",
        "--remount-ro", "/run",
        "--remount-ro", "/home/alice",
        "--remount-ro", "/var/lib/homes",
        "--seccomp", "3",
    ]  # fmt: skip


def test_gate_fds_come_first_and_the_command_runs_bare() -> None:
    argv = bwrap_argv(Policy(workspace=WS), ["/bin/srv"], cwd=WS, gate_fds=(7, 9))
    assert argv[1:5] == ["--info-fd", "7", "--block-fd", "9"]
    assert argv[argv.index("--") + 1:] == ["/bin/srv"]  # the limits are set on bwrap's process (gate.py)


def test_proxied_command_runs_behind_the_forwarder_which_applies_seccomp_itself() -> None:
    policy = private_home_policy(network="proxy", proxy_socket=Path("/tmp/mcp-0/p-1.sock"), allowed_hosts=("a.org",))
    forwarder = Forwarder("/usr/bin/python3", Path("/src/sandbox/forwarder.py"))
    argv = bwrap_argv(policy, ["/usr/bin/npx", "-y", "x"], cwd=WS, seccomp_fd=3, forwarder=forwarder)
    assert "--seccomp" not in argv and "--share-net" not in argv
    assert "--as-pid-1" in argv  # no unfiltered bwrap init beside the command: the forwarder is pid 1
    socket = argv.index("/run/mcp-bridge/proxy.sock")
    assert argv[socket - 2:socket + 4] == [
        "--bind", "/tmp/mcp-0/p-1.sock", "/run/mcp-bridge/proxy.sock",
        "--ro-bind", "/src/sandbox/forwarder.py", "/run/mcp-bridge/forwarder.py",
    ]  # fmt: skip
    assert socket < argv.index("--remount-ro")  # bound before /run turns read-only
    assert argv[argv.index("--chdir") + 3:] == [
        "/usr/bin/python3", "-I", "-S", "/run/mcp-bridge/forwarder.py", "/run/mcp-bridge/proxy.sock",
        "3128", "3", "--", "/usr/bin/npx", "-y", "x",
    ]  # fmt: skip
