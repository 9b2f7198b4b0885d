"""`mcp-bridge config claude-desktop`: what it prints starts the bridge the way Claude Desktop does,
from `/` with a GUI app's bare environment, and speaks to it as Claude Desktop speaks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bridge_proc import FOUR_TOOLS, StdioPeer
from cli_support import BRIDGE, CliDirs, RunCli

from bridge.cli import desktop
from sandbox.environment import TRUST

# What a macOS GUI app such as Claude Desktop hands a server besides the entry's own env.
GUI_ENV = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root", "USER": "root", "LOGNAME": "root"}


def start_like_claude_desktop(entry: dict[str, Any]) -> list[str]:
    """Spawn the entry from `/`, initialize as claude-ai at 2025-11-25, and list the tools."""
    proc = subprocess.Popen(
        [entry["command"], *entry["args"]],
        cwd="/",
        env={**GUI_ENV, **entry["env"]},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        peer = StdioPeer(proc)
        peer.handshake("2025-11-25", "claude-ai")
        return [tool["name"] for tool in peer.result("tools/list")["tools"]]
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()  # type: ignore[union-attr]
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def test_printed_entry_starts_the_bridge_from_root_with_a_bare_env(
    cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in TRUST:
        monkeypatch.delenv(name, raising=False)
    ran = cli("config", "claude-desktop")
    assert ran.code == 0
    entry = ran.json()["mcpServers"]["mcp-bridge"]
    assert entry == {
        "command": BRIDGE,
        "args": [],
        "env": {
            "MCP_WORKSPACE": str(cli_dirs.workspace),
            "MCP_STATE_DIR": str(cli_dirs.state),
            "MCP_CONFIG": str(cli_dirs.config),  # the developer's servers, found from / too
        },
    }
    assert not cli_dirs.registry.exists()
    assert start_like_claude_desktop(entry) == FOUR_TOOLS
    assert cli_dirs.registry.exists()  # the bridge used the printed state dir


def test_the_entry_carries_the_cas_of_a_tls_inspected_network(cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Desktop's bare environment would lose them; uvx and npx behind such a network need them."""
    for name in TRUST:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/certs/corporate.pem")
    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", "/etc/ssl/certs/corporate.pem")
    env = cli("config", "claude-desktop").json()["mcpServers"]["mcp-bridge"]["env"]
    assert env["SSL_CERT_FILE"] == env["NODE_EXTRA_CA_CERTS"] == "/etc/ssl/certs/corporate.pem"
    assert "SSL_CERT_DIR" not in env and "REQUESTS_CA_BUNDLE" not in env  # only what is set


def test_without_a_script_beside_python_the_entry_runs_python_m_cli(
    cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    lone = cli_dirs.base / "bin" / "python3"
    lone.parent.mkdir()
    lone.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(lone))
    assert desktop.bridge_command() == [str(lone), "-m", "bridge.cli"]
    monkeypatch.undo()
    dirs = {"MCP_WORKSPACE": str(cli_dirs.workspace), "MCP_STATE_DIR": str(cli_dirs.state)}
    entry = {"command": sys.executable, "args": ["-m", "bridge.cli"], "env": dirs}
    assert start_like_claude_desktop(entry) == FOUR_TOOLS


def test_relative_options_are_printed_absolute(cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in TRUST:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(cli_dirs.base)
    ran = cli("config", "claude-desktop", "--name", "bridge", "--workspace", "ws", "--state-dir", "other-state")
    entry = ran.json()["mcpServers"]["bridge"]
    assert entry["env"] == {
        "MCP_WORKSPACE": str(cli_dirs.workspace),
        "MCP_STATE_DIR": str(cli_dirs.base / "other-state"),
        "MCP_CONFIG": str(cli_dirs.config),
    }
    assert Path(entry["command"]).is_absolute()


def test_a_missing_workspace_exits_2(cli: RunCli, cli_dirs: CliDirs) -> None:
    ran = cli("config", "claude-desktop", "--workspace", str(cli_dirs.base / "nope"))
    assert ran.code == 2 and "is not an existing directory" in ran.err and ran.out == ""


@pytest.mark.parametrize("workspace", ["/", "home"])
def test_a_workspace_at_root_or_home_is_refused_not_printed(
    cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch, workspace: str
) -> None:
    monkeypatch.setenv("HOME", str(cli_dirs.base))
    ran = cli("config", "claude-desktop", "--workspace", "/" if workspace == "/" else str(cli_dirs.base))
    assert ran.code == 2 and ran.out == ""
    assert "MCP_WORKSPACE is the" in ran.err and '"MCP_WORKSPACE": "/"' not in ran.out
