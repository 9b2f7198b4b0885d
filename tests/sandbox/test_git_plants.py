"""Nothing a child writes into a repository is later run by the host's git.

Each plant is the real attack: a `core.fsmonitor` (run by the host's next `git status`) or a hook
(run by `git commit`) whose payload touches a marker file. The host's own git runs afterwards and
the marker must be absent; the positive twin makes the same plant where it is allowed (a
`git_write_paths` repository, or on the host) and the marker appears, so the payload is real.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from sandbox_box import Box, host_git

import sandbox.policy
from sandbox import new_repositories
from sandbox.repos import scan_roots

pytestmark = pytest.mark.bwrap
def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    assert host_git(path, "commit", "-q", "--allow-empty", "-m", "init").returncode == 0
    return path


@pytest.fixture
def marker(box: Box) -> Path:
    return box.root / f"marker-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def repo(box: Box) -> Path:
    (box.ws / ".git" / "config").unlink()
    for leftover in sorted((box.ws / ".git").rglob("*"), reverse=True):
        leftover.rmdir() if leftover.is_dir() else leftover.unlink()
    (box.ws / ".git").rmdir()
    return make_repo(box.ws)


def sandboxed_sh(box: Box, script: str, **launch_kw: object) -> subprocess.CompletedProcess[str]:
    return box.run(box.launch("/bin/sh", ["-c", script], **launch_kw))  # type: ignore[arg-type]


def fsmonitor(marker: Path) -> str:
    return f"[core]\n\tfsmonitor = touch {marker}; false\n"


def test_commondir_plant_is_refused_and_host_git_status_runs_nothing(box: Box, repo: Path, marker: Path) -> None:
    evil = repo / "evil"
    script = (
        f"mkdir -p {evil} && cp -r {repo}/.git/. {evil}/ && printf '{fsmonitor(marker)}' > {evil}/config && "
        f"echo {evil} > {repo}/.git/commondir"
    )
    proc = sandboxed_sh(box, script)
    assert proc.returncode != 0 and "Read-only file system" in proc.stderr
    assert host_git(repo, "status").returncode == 0
    assert not marker.exists()


def test_commondir_plant_on_the_host_would_run_the_payload(box: Box, repo: Path, marker: Path) -> None:
    """Positive twin: the same files written outside the sandbox make `git status` run it."""
    evil = repo / "evil"
    subprocess.run(["cp", "-r", f"{repo}/.git/.", f"{evil}/"], check=True)
    (evil / "config").write_text(fsmonitor(marker))
    (repo / ".git" / "commondir").write_text(f"{evil}\n")
    host_git(repo, "status")
    assert marker.exists()


def test_nested_repository_hooks_and_config_stay_read_only(box: Box, repo: Path, marker: Path) -> None:
    sub = make_repo(repo / "vendor" / "lib")
    script = (
        f"printf '{fsmonitor(marker)}' >> {sub}/.git/config; "
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > {sub}/.git/hooks/pre-commit; "
        f"chmod +x {sub}/.git/hooks/pre-commit"
    )
    proc = sandboxed_sh(box, script)
    assert "Read-only file system" in proc.stderr
    assert host_git(sub, "status").returncode == 0
    assert host_git(sub, "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
    assert not marker.exists()


def test_nested_repository_in_git_write_paths_takes_the_plant(box: Box, repo: Path, marker: Path) -> None:
    """Positive twin: opted in per path, the child may write that repository, and it is trusted."""
    sub = make_repo(repo / "vendor" / "lib")
    script = f"printf '#!/bin/sh\\ntouch {marker}\\n' > {sub}/.git/hooks/pre-commit && chmod +x {sub}/.git/hooks/pre-commit"
    assert sandboxed_sh(box, script, git_write_paths=(str(sub),)).returncode == 0
    assert host_git(sub, "commit", "-q", "--allow-empty", "-m", "x").returncode == 0
    assert marker.exists()


def test_git_read_operations_work_inside_the_sandbox(box: Box, repo: Path) -> None:
    (repo / "a.txt").write_text("a\n")
    proc = sandboxed_sh(box, f"cd {repo} && git log --oneline && git status --short && git diff --stat")
    assert proc.returncode == 0, proc.stderr
    assert "init" in proc.stdout and "?? a.txt" in proc.stdout


def test_git_init_at_the_root_inside_a_parent_repository_is_refused(box: Box, marker: Path) -> None:
    parent = make_repo(box.root / "parent")
    ws = parent / "ws"
    ws.mkdir()
    launch = box.launch(
        "/bin/sh",
        ["-c", f"git init -q . && git config core.fsmonitor 'touch {marker}; false'"],
        workspace=ws,
        cwd=ws,
    )
    proc = box.run(launch)
    assert proc.returncode != 0
    assert not (ws / ".git").exists()  # the placeholder is gone again
    status = host_git(ws, "status", "--porcelain")
    assert status.returncode == 0 and not marker.exists()  # the host's git still finds the parent


def test_git_init_below_the_root_is_detected_when_the_session_ends(box: Box, marker: Path) -> None:
    parent = make_repo(box.root / "parent")
    ws = parent / "ws"
    ws.mkdir()
    launch = box.launch(
        "/bin/sh",
        ["-c", f"git init -q deeper && git -C deeper config core.fsmonitor 'touch {marker}; false'"],
        workspace=ws,
        cwd=ws,
    )
    assert box.run(launch).returncode == 0  # mounts cannot stop a repository made after the spawn
    assert new_repositories(launch) == (ws / "deeper" / ".git",)


def test_no_new_repository_is_reported_for_a_quiet_session(box: Box, repo: Path) -> None:
    make_repo(repo / "sub")
    launch = box.launch("/bin/true", [])
    box.run(launch)
    assert new_repositories(launch) == ()


@pytest.fixture
def reused_scan(box: Box, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace without a `.git`, scanned before the spawn and the scan reused (as after an
    `mcp_add_server` that planned the launch, within SCAN_REUSE_S of the first call)."""
    shutil.rmtree(box.ws / ".git")
    monkeypatch.setattr(sandbox.policy, "SCAN_REUSE_S", 600.0)
    scan_roots((box.ws,))
    return box.ws


def test_a_root_git_another_bridge_makes_after_a_reused_scan_is_not_reported_as_the_childs(
    box: Box, reused_scan: Path
) -> None:
    (reused_scan / ".git").mkdir()  # another bridge's placeholder, made after the scan
    launch = box.launch("/bin/true", [])
    assert box.run(launch).returncode == 0
    assert new_repositories(launch) == ()


def test_a_repository_the_child_makes_after_a_reused_scan_is_reported(box: Box, reused_scan: Path) -> None:
    launch = box.launch("/bin/sh", ["-c", "git init -q deeper"])
    assert box.run(launch).returncode == 0
    assert new_repositories(launch) == (reused_scan / "deeper" / ".git",)
