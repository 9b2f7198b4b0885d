"""Every repository in a writable root is found, at any depth, `node_modules` included, and a scan
that meets its bound refuses the root instead of leaving a repository writable (issue 27, point 4).

The attack: the scan stopped at depth 4 and after 1000 folders and skipped `node_modules`, so a
child set `core.fsmonitor` in a repository deeper, behind 1100 sibling folders, or in a package,
and the host's next `git status` there ran it. Each plant below is refused (the host's git runs
nothing); the twins show the payload is real on the host and that a shallow write still lands.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from sandbox_box import Box, host_git

from sandbox import InvalidWorkspace

pytestmark = pytest.mark.bwrap
def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def plant(repo: Path, marker: Path) -> str:
    return f"printf '[core]\\n\\tfsmonitor = touch {marker}; false\\n' >> {repo}/.git/config"


def deep(box: Box) -> Path:
    return make_repo(box.ws / "a" / "b" / "c" / "d" / "e" / "f" / "repo")  # depth 7


def behind_siblings(box: Box) -> Path:
    for i in range(1100):
        (box.ws / "many" / f"d{i:04}").mkdir(parents=True)
    return make_repo(box.ws / "many" / "zz" / "repo")  # below every sibling in a breadth-first scan


def in_node_modules(box: Box) -> Path:
    return make_repo(box.ws / "node_modules" / "left-pad")


@pytest.mark.parametrize("where", [deep, behind_siblings, in_node_modules], ids=lambda f: f.__name__)
def test_a_child_cannot_set_fsmonitor_in_any_repository_of_the_workspace(box: Box, where) -> None:  # type: ignore[no-untyped-def]
    repo = where(box)
    marker = box.root / f"marker-{uuid.uuid4().hex[:8]}"
    proc = box.run(box.launch("/bin/sh", ["-c", plant(repo, marker)]))
    assert proc.returncode != 0 and "Read-only file system" in proc.stderr, proc.stderr
    host_git(repo, "status")
    assert not marker.exists()
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()


def test_the_same_fsmonitor_written_on_the_host_runs_at_git_status(box: Box) -> None:
    """Positive twin: the payload is real, so the refusal above is what keeps the marker away."""
    repo = deep(box)
    marker = box.root / f"marker-{uuid.uuid4().hex[:8]}"
    subprocess.run(["/bin/sh", "-c", plant(repo, marker)], check=True)
    host_git(repo, "status")
    assert marker.exists()


def test_a_child_writes_beside_the_deep_repositories(box: Box) -> None:
    """Positive twin: the workspace itself stays writable, shallow and deep."""
    deep(box)
    proc = box.run(box.launch("/bin/sh", ["-c", f"echo x > {box.ws}/out.txt && echo y > {box.ws}/a/b/c/d/e/f/out.txt"]))
    assert proc.returncode == 0, proc.stderr
    assert (box.ws / "out.txt").read_text() == "x\n" and (box.ws / "a/b/c/d/e/f/out.txt").read_text() == "y\n"


def test_a_scan_that_meets_its_bound_refuses_the_root_and_names_the_setting(box: Box) -> None:
    behind_siblings(box)
    with pytest.raises(InvalidWorkspace, match="more than 500 folders.*MCP_SANDBOX_SCAN_MAX_DIRS"):
        box.launch("/bin/true", [], scan_max_dirs=500)
    launch = box.launch("/bin/true", [], scan_max_dirs=5000)  # twin: a bound the tree fits in
    assert box.run(launch).returncode == 0
