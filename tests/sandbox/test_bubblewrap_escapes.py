"""Real escape attempts through `prepare_launch` + bwrap, each beside its positive twin.

Every denial also checks the host side: the child's exit status alone proves nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_box import CHILD_PROBE, SECRET, Box

from sandbox import finish_launch

pytestmark = pytest.mark.bwrap

# --- writes ---------------------------------------------------------------------------------------


def test_write_inside_workspace_lands_on_host(box: Box) -> None:
    target = box.ws / "out.txt"
    assert box.probe("write", str(target))["ok"]
    assert target.read_text() == "written from the sandbox\n"


def test_write_to_home_fails_without_host_side_effect(box: Box) -> None:
    target = box.home / "planted.txt"
    assert not box.probe("write", str(target))["ok"]
    assert not target.exists()


def test_write_to_etc_fails_without_host_side_effect(box: Box) -> None:
    target = Path("/etc") / f"mcp-sandbox-{uuid.uuid4().hex}"
    assert not box.probe("write", str(target))["ok"]
    assert not target.exists()


def test_write_into_git_objects_fails_the_whole_git_dir_is_read_only(box: Box) -> None:
    target = box.ws / ".git" / "objects" / "blob"
    assert not box.probe("write", str(target))["ok"]
    assert not target.exists()


def test_write_into_git_objects_succeeds_for_a_git_write_path(box: Box) -> None:
    target = box.ws / ".git" / "objects" / "blob"
    assert box.probe("write", str(target), git_write_paths=(str(box.ws),))["ok"]
    assert target.exists()


def test_write_into_git_hooks_fails_without_host_side_effect(box: Box) -> None:
    target = box.ws / ".git" / "hooks" / "pre-commit"
    assert not box.probe("write", str(target))["ok"]
    assert not target.exists()


def test_write_to_git_config_fails(box: Box) -> None:
    assert not box.probe("write", str(box.ws / ".git" / "config"))["ok"]
    assert (box.ws / ".git" / "config").read_text() == "[core]\n"


def test_rename_of_plain_workspace_dir_succeeds(box: Box) -> None:
    (box.ws / "src").mkdir()
    assert box.probe("rename", str(box.ws / "src"), str(box.ws / "lib"))["ok"]
    assert (box.ws / "lib").is_dir()


def test_rename_of_git_dir_fails_so_hooks_cannot_be_replaced(box: Box) -> None:
    result = box.probe("rename", str(box.ws / ".git"), str(box.ws / "old-git"))
    assert not result["ok"]
    assert (box.ws / ".git" / "hooks").is_dir() and not (box.ws / "old-git").exists()


def test_write_into_masked_secret_dir_fails(box: Box) -> None:
    assert not box.probe("write", str(box.home / ".ssh" / "authorized_keys"))["ok"]
    assert not (box.home / ".ssh" / "authorized_keys").exists()


# --- reads ----------------------------------------------------------------------------------------


def test_real_home_is_hidden_even_its_public_files(box: Box) -> None:
    assert not box.probe("read", str(box.home / "public.txt"))["ok"]


def test_read_path_in_home_is_readable(box: Box) -> None:
    result = box.probe("read", str(box.home / "public.txt"), read_paths=(str(box.home / "public.txt"),))
    assert result == {"ok": True, "detail": "public\n"}


def test_read_ssh_key_fails(box: Box) -> None:
    result = box.probe("read", str(box.home / ".ssh" / "id_ed25519"))
    assert not result["ok"] and SECRET not in json.dumps(result)


def test_listing_ssh_dir_fails(box: Box) -> None:
    assert not box.probe("listdir", str(box.home / ".ssh"))["ok"]


def test_read_netrc_fails(box: Box) -> None:
    result = box.probe("read", str(box.home / ".netrc"))
    assert not result["ok"] and "hunter2" not in json.dumps(result)


def test_read_secret_through_symlinked_dir_fails(box: Box) -> None:
    real = box.root / "aws-real"
    real.mkdir()
    (real / "credentials").write_text("aws_secret_access_key=x\n")
    (box.home / ".aws").symlink_to(real)
    assert not box.probe("read", str(box.home / ".aws" / "credentials"))["ok"]
    assert not box.probe("read", str(real / "credentials"))["ok"]


def test_read_registry_in_state_dir_fails(box: Box) -> None:
    assert not box.probe("read", str(box.state / "tool_mcp" / "servers.json"))["ok"]


def test_read_registry_in_state_dir_inside_workspace_fails(box: Box) -> None:
    state = box.ws / "work"
    (state / "tool_mcp").mkdir(parents=True)
    (state / "tool_mcp" / "servers.json").write_text("{}")
    (box.ws / "readme.txt").write_text("hello\n")
    assert box.probe("read", str(box.ws / "readme.txt"), state_dir=state)["ok"]
    assert not box.probe("read", str(state / "tool_mcp" / "servers.json"), state_dir=state)["ok"]


def test_state_dir_inside_workspace_cannot_be_renamed_away(box: Box) -> None:
    state = box.ws / "var" / "work"
    state.mkdir(parents=True)
    result = box.probe("rename", str(box.ws / "var"), str(box.ws / "moved"), state_dir=state)
    assert not result["ok"] and state.is_dir()


def test_read_legacy_registry_passed_as_secret_path_fails(box: Box) -> None:
    legacy = box.ws / "tool_mcp" / "servers.json"
    legacy.parent.mkdir()
    legacy.write_text("{}")
    assert box.probe("read", str(legacy))["ok"]
    assert not box.probe("read", str(legacy), secret_paths=(legacy,))["ok"]


def test_etc_passwd_is_readable(box: Box) -> None:
    assert box.probe("read", "/etc/passwd")["ok"]


@pytest.mark.skipif(os.geteuid() != 0, reason="as non-root, /etc/shadow is unreadable anyway")
def test_etc_shadow_is_unreadable_as_root(box: Box) -> None:
    assert not box.probe("read", "/etc/shadow")["ok"]


@pytest.mark.skipif(os.geteuid() != 0, reason="/root is masked only for a root bridge")
def test_root_home_is_masked_when_it_is_not_home(box: Box) -> None:
    assert not box.probe("listdir", "/root")["ok"]


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.realpath(sys.executable).startswith("/root/"),
    reason="needs a root bridge whose python lives under /root",
)
def test_interpreter_under_root_runs_when_home_is_root(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/root")
    launch = box.launch(sys.executable, ["-I", "-c", "print('started')"])
    assert box.run(launch).stdout == "started\n"


# --- privileges -----------------------------------------------------------------------------------


def test_remount_root_read_write_fails(box: Box) -> None:
    proc = box.run(box.launch("/usr/bin/mount", ["-o", "remount,rw", "/"]))
    assert proc.returncode != 0
    target = Path("/etc") / f"mcp-sandbox-{uuid.uuid4().hex}"
    assert not box.probe("write", str(target))["ok"] and not target.exists()


def test_child_has_no_capabilities(box: Box) -> None:
    status = box.probe("read", "/proc/self/status")["detail"]
    assert "CapEff:\t0000000000000000" in status


def test_nested_user_namespace_fails(box: Box) -> None:
    if subprocess.run(["/usr/bin/unshare", "-U", "/bin/true"], check=False).returncode != 0:
        pytest.skip("the host cannot unshare -U either, so the denial would prove nothing")
    assert box.run(box.launch("/usr/bin/unshare", ["-U", "/bin/true"])).returncode != 0


# --- environment ----------------------------------------------------------------------------------


def test_no_bridge_secret_in_any_visible_environ(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("BRIDGE_CANARY_TOKEN", canary)
    monkeypatch.setenv("BRIDGE_PLAIN_CANARY", canary)  # not credential-looking: only the allowlist stops it
    environs = box.probe("environ", server_env={"SERVER_SETTING": "visible"})["detail"]
    readable = [text for text in environs.values() if not text.startswith("unreadable")]
    assert len(readable) >= 2  # bwrap's pid 1 and the child itself
    assert any("SERVER_SETTING=visible" in text for text in readable)
    assert all(canary not in text for text in environs.values())


def test_prefixed_variable_reaches_child_but_prefixed_token_does_not(
    box: Box, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRIDGE_REGION", "eu")
    monkeypatch.setenv("BRIDGE_API_TOKEN", "tok-123")
    environs = box.probe("environ", child_env_prefixes=("BRIDGE_",))["detail"]
    child = "\n".join(environs.values())
    assert "BRIDGE_REGION=eu" in child and "tok-123" not in child


# --- network and sockets --------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server
    finally:
        server.close()


def test_host_loopback_is_reachable_with_network_allow(box: Box, listener: socket.socket) -> None:
    port = str(listener.getsockname()[1])
    assert box.probe("connect", "127.0.0.1", port, network="allow")["ok"]


def test_host_loopback_is_unreachable_with_network_deny(box: Box, listener: socket.socket) -> None:
    port = str(listener.getsockname()[1])
    assert not box.probe("connect", "127.0.0.1", port)["ok"]


def test_server_network_deny_overrides_config_allow(box: Box, listener: socket.socket) -> None:
    port = str(listener.getsockname()[1])
    assert not box.probe("connect", "127.0.0.1", port, network="allow", server_network="deny")["ok"]


def test_server_network_allow_overrides_config_deny(box: Box, listener: socket.socket) -> None:
    port = str(listener.getsockname()[1])
    assert box.probe("connect", "127.0.0.1", port, network="deny", server_network="allow")["ok"]


def test_unix_socket_in_host_tmp_is_unreachable(box: Box) -> None:
    path = Path(f"/tmp/mcp-sandbox-{uuid.uuid4().hex[:8]}.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen()
        try:
            assert not box.probe("connect_unix", str(path))["ok"]
        finally:
            path.unlink()


def test_unix_socket_in_workspace_is_refused_too(box: Box) -> None:
    """seccomp refuses creating any AF_UNIX socket: it cannot see which path a connect() names."""
    path = box.ws / "agent.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen()
        result = box.probe("connect_unix", str(path))
    assert not result["ok"] and "Operation not permitted" in result["detail"]


def test_socketpair_still_works_under_the_filter(box: Box) -> None:
    assert box.probe("socketpair")["ok"]


# --- private /tmp ---------------------------------------------------------------------------------


def test_tmp_is_writable_but_private(box: Box) -> None:
    name = f"/tmp/mcp-sandbox-{uuid.uuid4().hex}"
    assert box.probe("write", name)["ok"]
    assert not os.path.exists(name)


def test_host_tmp_files_are_invisible(box: Box) -> None:
    host_file = Path(f"/tmp/mcp-sandbox-{uuid.uuid4().hex}")
    host_file.write_text("host\n")
    try:
        assert not box.probe("read", str(host_file))["ok"]
    finally:
        host_file.unlink()


# --- lifetime -------------------------------------------------------------------------------------


def _growth(path: Path, seconds: float) -> int:
    before = path.stat().st_size if path.exists() else 0
    time.sleep(seconds)
    return (path.stat().st_size if path.exists() else 0) - before


def test_child_dies_when_parent_dies(box: Box) -> None:
    beat = box.ws / "heartbeat"
    launch = box.launch(box.python, ["-I", str(CHILD_PROBE), "heartbeat", str(beat)])
    parent_code = (
        "import json, subprocess, sys, time; a = json.loads(sys.argv[1]);"
        "p = subprocess.Popen(a['argv'], env=a['env'], cwd=a['cwd'], pass_fds=a['fds']);"
        "print(p.pid, flush=True); time.sleep(60)"
    )
    spec = json.dumps({"argv": [launch.command, *launch.args], "env": launch.env, "cwd": launch.cwd, "fds": launch.pass_fds})
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code, spec], stdout=subprocess.PIPE, text=True, pass_fds=launch.pass_fds
    )
    try:
        assert parent.stdout is not None and launch.gate is not None
        bwrap_pid = int(parent.stdout.readline())
        launch.gate.release(bwrap_pid)  # the parent's child, held by bwrap until the gate lets it go
        deadline = time.monotonic() + 10
        while not beat.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _growth(beat, 0.3) > 0, "the sandboxed child never started beating"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        time.sleep(0.3)  # let SIGKILL propagate down the pdeathsig chain
        assert _growth(beat, 0.5) == 0, "the sandboxed child outlived its parent"
        assert _gone(bwrap_pid)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        finish_launch(launch)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


# --- a node child ---------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_child_starts_and_is_confined(box: Box) -> None:
    node = os.path.realpath(shutil.which("node") or "")
    script = (
        "const fs = require('fs'); const [ws, key] = process.argv.slice(1);"
        "fs.writeFileSync(ws + '/from-node.txt', 'ok');"
        "try { fs.readFileSync(key); console.log('READ'); } catch (e) { console.log(e.code); }"
    )
    launch = box.launch(node, ["-e", script, str(box.ws), str(box.home / ".ssh" / "id_ed25519")])
    proc = box.run(launch)
    assert proc.stdout.strip() in ("EACCES", "ENOENT"), proc.stderr
    assert (box.ws / "from-node.txt").read_text() == "ok"
