"""Fixtures for the CLI tests: a workspace and state dir under /var/tmp set as the bridge's env, and
`cli` to run `mcp-bridge ARGS` in this process (exit code, stdout, stderr).

The workspace and state dir live under /var/tmp, never /tmp: the sandbox gives stdio children a
private /tmp, so a workspace there would not be the one the child sees.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import CliDirs, RunCli, run_in_process

_SETTINGS_TOUCHED = ("MCP_CHILD_ENV_PREFIXES", "MCP_ALLOW_DYNAMIC", "MCP_ALLOWED_TRANSPORTS", "MCP_SESSION_IDLE_S")


@pytest.fixture
def cli_dirs(monkeypatch: pytest.MonkeyPatch) -> Iterator[CliDirs]:
    base = Path(tempfile.mkdtemp(prefix="cli-test-", dir="/var/tmp")).resolve()
    dirs = CliDirs(base=base)
    dirs.workspace.mkdir()
    monkeypatch.setenv("MCP_WORKSPACE", str(dirs.workspace))
    monkeypatch.setenv("MCP_STATE_DIR", str(dirs.state))
    monkeypatch.setenv("MCP_HOMES_DIR", str(dirs.homes))
    monkeypatch.setenv("MCP_TIMEOUT", "30")
    monkeypatch.setenv("MCP_CONFIG", str(dirs.config))
    dirs.provision({})
    for name in _SETTINGS_TOUCHED:
        monkeypatch.delenv(name, raising=False)
    try:
        yield dirs
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def cli(cli_dirs: CliDirs, capsys: pytest.CaptureFixture[str]) -> RunCli:
    """`cli("servers", "list")` -> Ran(code, out, err), with the test's dirs as MCP_WORKSPACE / MCP_STATE_DIR."""
    return lambda *argv: run_in_process(capsys, *argv)
