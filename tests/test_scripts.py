"""`scripts/setup.sh`: starting the bridge does not reinstall it when nothing changed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def project(tmp_path: Path) -> Path:
    """A project folder whose `.venv/bin/python` only records how it was called."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/../calls"\n')
    python.chmod(0o755)
    return tmp_path


def ensure_venv(folder: Path, extras: str = "") -> list[str]:
    subprocess.run(["bash", "-c", f'source scripts/setup.sh && ensure_venv "{extras}"'], cwd=folder, check=True)
    calls = folder / ".venv" / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_a_second_start_installs_nothing(tmp_path: Path) -> None:
    folder = project(tmp_path)
    assert len(ensure_venv(folder)) == 1
    assert len(ensure_venv(folder)) == 1


def test_a_changed_pyproject_installs_again(tmp_path: Path) -> None:
    folder = project(tmp_path)
    ensure_venv(folder)
    (folder / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert len(ensure_venv(folder)) == 2


def test_extras_not_yet_installed_are_installed_and_a_plain_start_after_them_is_not(tmp_path: Path) -> None:
    folder = project(tmp_path)
    ensure_venv(folder)
    calls = ensure_venv(folder, "[test]")
    assert len(calls) == 2 and calls[-1].endswith("-e .[test]")
    assert len(ensure_venv(folder)) == 2


def run_sh_workspace(tmp_path: Path, env: dict[str, str]) -> str:
    """What `scripts/run.sh` hands the bridge as MCP_WORKSPACE (setup and the bridge stubbed)."""
    (tmp_path / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "run.sh", tmp_path / "scripts" / "run.sh")
    (tmp_path / "scripts" / "setup.sh").write_text("ensure_debian_packages() { :; }\nensure_venv() { :; }\n")
    bridge = tmp_path / ".venv" / "bin" / "mcp-bridge"
    bridge.parent.mkdir(parents=True)
    bridge.write_text('#!/bin/sh\nprintf %s "$MCP_WORKSPACE"\n')
    bridge.chmod(0o755)
    run = subprocess.run(["bash", str(tmp_path / "scripts" / "run.sh")], env={"PATH": "/usr/bin:/bin", **env},
                         capture_output=True, text=True, check=True)  # fmt: skip
    return run.stdout


def test_run_sh_sets_a_workspace_outside_the_checkout(tmp_path: Path) -> None:
    """Started in its checkout with no MCP_WORKSPACE, the workspace was the checkout: a child could
    rewrite the bridge's own code there (issue 27)."""
    home = tmp_path / "home"
    home.mkdir()
    workspace = run_sh_workspace(tmp_path / "checkout", {"HOME": str(home)})
    assert workspace == str(home / "mcp-workspace") and Path(workspace).is_dir()


def test_run_sh_keeps_the_workspace_it_is_given(tmp_path: Path) -> None:
    chosen = tmp_path / "project"
    chosen.mkdir()
    assert run_sh_workspace(tmp_path / "checkout", {"HOME": str(tmp_path), "MCP_WORKSPACE": str(chosen)}) == str(chosen)
