"""Sandbox test hooks and the `box` fixture.

Tests marked `bwrap` need a working bubblewrap. Without one they skip, unless REQUIRE_SANDBOX=1
(CI), where a missing sandbox is a failure: a box without bwrap must go red, not green by skipping.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_box import REQUIRED, SECRET, Box, bwrap_problem, visible_python


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "bwrap: needs a working bubblewrap (REQUIRE_SANDBOX=1: fail, not skip)"
    )
    config.addinivalue_line("markers", "registry: downloads real packages from npm and PyPI")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("bwrap") is None:
        return
    problem = bwrap_problem()
    if problem and REQUIRED:
        pytest.fail(f"REQUIRE_SANDBOX=1 but {problem}", pytrace=False)
    if problem:
        pytest.skip(problem)


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    root = Path(tempfile.mkdtemp(prefix="mcp-sandbox-test-", dir="/var/tmp"))
    home, ws, state = root / "home", root / "ws", root / "state"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(SECRET)
    (home / ".netrc").write_text("machine example.com password hunter2\n")
    (home / "public.txt").write_text("public\n")
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "objects").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    (state / "tool_mcp").mkdir(parents=True)
    (state / "tool_mcp" / "servers.json").write_text('{"headers": {"Authorization": "Bearer x"}}')
    monkeypatch.setenv("HOME", str(home))
    try:
        yield Box(root=root, home=home, ws=ws, state=state, python=visible_python())
    finally:
        shutil.rmtree(root)
        shutil.rmtree(f"/tmp/mcp-box-{root.name[-8:]}", ignore_errors=True)
