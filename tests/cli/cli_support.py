"""Types and helpers shared by the CLI tests."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bridge.cli.main import main

BRIDGE = str(Path(sys.executable).with_name("mcp-bridge"))


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


RunCli = Callable[..., Ran]


@dataclass(frozen=True)
class CliDirs:
    base: Path

    @property
    def workspace(self) -> Path:
        return self.base / "ws"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def homes(self) -> Path:
        """The servers' private homes (`MCP_HOMES_DIR`), apart from every other test's."""
        return self.base / "homes"

    @property
    def config(self) -> Path:
        """The developer's config file the CLI reads (`MCP_CONFIG`)."""
        return self.base / "config.py"

    def provision(self, servers: dict[str, Any]) -> None:
        """Make `servers` the developer's MCP_SERVERS."""
        self.config.write_text(f"MCP_SERVERS = {servers!r}\n")

    def provisioned(self) -> dict[str, Any]:
        from bridge.settings import developer_servers

        return developer_servers(self.config)

    @property
    def registry(self) -> Path:
        return self.state / "tool_mcp" / "servers.json"

    def registry_entries(self) -> dict[str, Any]:
        return json.loads(self.registry.read_text())["servers"]


def run_in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> Ran:
    capsys.readouterr()
    code = main(list(argv))
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


def run_script(*argv: str, env: dict[str, str], cwd: str = "/") -> Ran:
    """The installed `mcp-bridge` script as a separate process, as a shell script would run it."""
    proc = subprocess.run([BRIDGE, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return Ran(proc.returncode, proc.stdout, proc.stderr)
