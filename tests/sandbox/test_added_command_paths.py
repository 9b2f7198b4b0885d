"""A command the model adds whose program chain would need a folder only a planted file names is
refused at add (`spawn_failed`, with the reason), and nothing is registered (issue 27, point 1).

Driven through the bridge's own `add_server` tool, as a model would. The positive twin adds the
same planted venv pointing at the system python: it is registered, and its tool runs.
"""

from __future__ import annotations

import json
import os
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
ESCAPE = fixture_path("escape")
SITE = sysconfig.get_paths()["purelib"]  # fastmcp for the escape fixture, run by another python


@pytest.fixture
def root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="mcp-added-paths-", dir="/var/tmp"))
    for name in ("home", "ws", "state"):
        (root / name).mkdir()
    monkeypatch.setenv("HOME", str(root / "home"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bridge(root: Path) -> Bridge:
    settings = Settings(workspace=root / "ws", state_dir=root / "state", homes_dir=root / "homes", timeout=30)
    return Bridge(settings, {})


def venv_python(root: Path, home: str) -> Path:
    """What a model can make with its write access: a copied python beside a pyvenv.cfg."""
    venv = root / "ws" / "venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy2(visible_python(), venv / "bin" / "python3")
    (venv / "pyvenv.cfg").write_text(f"home = {home}\n")
    return venv / "bin" / "python3"


def test_added_server_whose_venv_names_the_real_home_is_refused_at_add(root: Path) -> None:
    secrets = root / "home" / ".config" / "Claude"
    secrets.mkdir(parents=True)
    (secrets / "claude_desktop_config.json").write_text('{"token": "stand-in"}')
    python = venv_python(root, str(secrets))
    b = bridge(root)
    try:
        reply = b.add_server("plant", command=str(python), args_json=json.dumps([ESCAPE, "--site", SITE]))
        assert reply.is_error, reply.text
        assert reply.data.code == "spawn_failed"
        assert str(root / "ws" / "venv" / "pyvenv.cfg") in reply.text
        assert "folder children can write" in reply.text
        assert "plant" not in b.registry.dynamic()
    finally:
        b.close()


def test_added_server_whose_venv_names_the_system_python_runs(root: Path) -> None:
    python = venv_python(root, os.path.dirname(visible_python()))
    b = bridge(root)
    try:
        reply = b.add_server("venv", command=str(python), args_json=json.dumps([ESCAPE, "--site", SITE]))
        assert not reply.is_error, reply.text
        target = root / "ws" / "out.txt"
        called = b.call_tool("venv", "write", json.dumps({"path": str(target), "text": "ran"}))
        assert isinstance(called.data, CallResult), called.text
        assert called.data.text == "ok"
        assert target.read_text() == "ran"
    finally:
        b.close()


def test_a_plant_in_a_config_servers_write_path_is_refused_at_add(root: Path) -> None:
    """The developer's server `writer` may write /data; a venv its child planted there grants nothing
    to a server the model adds (`child_writable`), as it would in the workspace."""
    data, secrets = root / "data", root / "home" / "projects"
    secrets.mkdir(parents=True)
    (data / "venv" / "bin").mkdir(parents=True)
    shutil.copy2(visible_python(), data / "venv" / "bin" / "python3")
    (data / "venv" / "pyvenv.cfg").write_text(f"home = {secrets}\n")
    settings = Settings(workspace=root / "ws", state_dir=root / "state", homes_dir=root / "homes", timeout=30)
    writer = {"transport": "stdio", "command": visible_python(), "args": ["-c", "pass"], "write_paths": [str(data)]}
    b = Bridge(settings, {"writer": writer})
    try:
        assert str(data) in b.sandbox.child_writable
        reply = b.add_server("plant", command=str(data / "venv" / "bin" / "python3"), args_json="[]")
        assert reply.is_error and "folder children can write" in reply.text, reply.text
    finally:
        b.close()
