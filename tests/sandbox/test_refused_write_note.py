"""A write the sandbox refuses inside a tool names the sandbox and `write_paths` (issue 27, point 10).

A real child (the escape fixture's `save`, which lets the OSError be the tool's error, as most
servers do) writes outside the workspace and into a git dir: the `tool_error` the model gets says
the sandbox kept the path read-only and which setting opens it. The twins: a write in the
workspace lands, and an error the sandbox did not cause gets no sandbox note.
"""

from __future__ import annotations

import json
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_box import visible_python

from bridge.models import CallResult
from bridge.settings import Settings
from bridge.tools import Bridge

# tests/helpers.py: tests/ is on sys.path only once a module directly under it was collected.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import fixture_path

pytestmark = pytest.mark.bwrap
SITE = sysconfig.get_paths()["purelib"]  # fastmcp for the escape fixture, run by another python


@pytest.fixture
def root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="mcp-write-note-", dir="/var/tmp"))
    for name in ("home", "ws/.git/hooks", "state", "outside"):
        (root / name).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(root / "home"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def bridge(root: Path) -> Iterator[Bridge]:
    settings = Settings(workspace=root / "ws", state_dir=root / "state", homes_dir=root / "homes", timeout=30)
    bridge = Bridge(settings, {})
    try:
        added = bridge.add_server("esc", command=visible_python(), args_json=json.dumps([fixture_path("escape"), "--site", SITE]))
        assert not added.is_error, added.text
        yield bridge
    finally:
        bridge.close()


def save(bridge: Bridge, path: Path) -> tuple[bool, str]:
    reply = bridge.call_tool("esc", "save", json.dumps({"path": str(path), "text": "x"}))
    return reply.is_error, reply.text


@pytest.mark.parametrize("where", ["outside/report.txt", "ws/.git/hooks/pre-commit"])
def test_a_write_the_sandbox_refuses_names_the_sandbox_and_write_paths(bridge: Bridge, root: Path, where: str) -> None:
    target = root / where
    is_error, text = save(bridge, target)
    assert is_error and "[tool_error]" in text, text
    assert "Read-only file system" in text  # the tool's own words stay
    assert f"{target} is read-only in the sandbox" in text and "write_paths" in text, text
    assert not target.exists()


def test_a_write_in_the_workspace_lands(bridge: Bridge, root: Path) -> None:
    reply = bridge.call_tool("esc", "save", json.dumps({"path": str(root / "ws" / "report.txt"), "text": "x"}))
    assert isinstance(reply.data, CallResult) and reply.data.text == "saved", reply.text
    assert (root / "ws" / "report.txt").read_text() == "x"


def test_an_error_the_sandbox_did_not_cause_has_no_sandbox_note(bridge: Bridge, root: Path) -> None:
    is_error, text = save(bridge, root / "ws" / "no-such-folder" / "report.txt")
    assert is_error and "No such file or directory" in text, text
    assert "sandbox" not in text
