"""The bridge installs cleanly anywhere: a wheel holds only its two packages, and the installed
command finds the developer's servers through MCP_CONFIG and keeps its state out of site-packages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bridge_proc import StdioPeer

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source") / "mcp-bridge"
    # Build from what git tracks, as a clean checkout would: no .venv, no work/, no caches.
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        target = source / name.decode()
        if (ROOT / name.decode()).is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name.decode(), target)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    [built] = out.glob("mcp_bridge-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with only the wheel installed; its dependencies come from the test venv's site-packages."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    # A plain path line: the test venv's own .pth files (its editable install of this checkout) stay unread.
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(wheel)], check=True, capture_output=True)
    yield venv


def test_the_wheel_holds_only_the_bridge_and_sandbox_packages(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
        entry_points = next(name for name in archive.namelist() if name.endswith("entry_points.txt"))
        scripts = archive.read(entry_points).decode()
    assert {top for top in tops if not top.endswith(".dist-info")} == {"bridge", "sandbox"}
    assert "mcp-bridge = bridge.cli.main:main" in scripts


def run_bridge(venv: Path, env: dict[str, str], cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    proc = subprocess.Popen(
        [str(venv / "bin" / "mcp-bridge")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    peer = StdioPeer(proc)
    try:
        peer.handshake()
        return [peer.result("tools/call", {"name": name, "arguments": arguments}) for name, arguments in calls]
    finally:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()


def test_the_installed_command_reads_mcp_config_and_keeps_state_in_the_user_data_dir(installed: Path, tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    cwd.mkdir()
    config = tmp_path / "my_config.py"
    config.write_text('MCP_SERVERS = {"docs": {"transport": "http", "url": "https://docs.example/mcp"}}\n')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "MCP_CONFIG": str(config), "MCP_WORKSPACE": str(cwd)}
    listed, added = run_bridge(
        installed,
        env,
        cwd,
        [("mcp_list_tools", {}), ("mcp_add_server", {"name": "more", "url": "https://more.example/mcp"})],
    )
    assert [server["name"] for server in listed["structuredContent"]["servers"]] == ["docs"]
    assert not added["isError"], added
    registry = home / ".local/share/mcp-bridge/tool_mcp/servers.json"
    assert list(json.loads(registry.read_text())["servers"]) == ["more"]
    site = next((installed / "lib").glob("python*/site-packages"))
    assert not list(site.rglob("servers.json")) and not (site / "work").exists()


def test_the_installed_command_without_mcp_config_serves_no_developer_servers(installed: Path, tmp_path: Path) -> None:
    # Not even this checkout's config.py, nor a config.py in its working directory.
    (tmp_path / "config.py").write_text('MCP_SERVERS = {"planted": {"transport": "http", "url": "https://x.example/mcp"}}\n')
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MCP_STATE_DIR": str(tmp_path / "state"), "MCP_WORKSPACE": str(tmp_path)}
    [listed] = run_bridge(installed, env, tmp_path, [("mcp_list_tools", {})])
    assert listed["structuredContent"]["servers"] == []


@pytest.mark.registry
def test_uvx_from_the_checkout_starts_the_bridge_and_its_claude_desktop_entry_outlives_uv_s_cache(tmp_path: Path) -> None:
    """uvx runs the bridge from uv's cache, which `uv cache prune` may empty: the entry it prints for
    Claude Desktop runs uvx again, from the checkout, and starts from `/` with a bare environment."""
    uvx = shutil.which("uvx") or str(Path(sys.executable).with_name("uvx"))
    cache = tmp_path / "uv"
    env = {"PATH": f"{Path(uvx).parent}:/usr/bin:/bin", "HOME": str(tmp_path), "UV_CACHE_DIR": str(cache)}
    env |= {name: os.environ[name] for name in ("SSL_CERT_FILE", "SSL_CERT_DIR") if name in os.environ}  # the machine's CAs
    (tmp_path / "ws").mkdir()
    dirs = {"MCP_STATE_DIR": str(tmp_path / "state"), "MCP_WORKSPACE": str(tmp_path / "ws")}
    ran = subprocess.run(
        [uvx, "--from", str(ROOT), "mcp-bridge", "config", "claude-desktop"],
        env={**env, **dirs},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    entry = json.loads(ran.stdout)["mcpServers"]["mcp-bridge"]
    assert [entry["command"], *entry["args"]] == [str(Path(uvx).absolute()), "--from", str(ROOT), "mcp-bridge"]
    assert str(cache) not in ran.stdout
    gui = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "UV_CACHE_DIR": str(cache)}  # the test's cache, warm
    proc = subprocess.Popen(
        [entry["command"], *entry["args"]],
        cwd="/",
        env={**gui, **entry["env"]},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    peer = StdioPeer(proc)
    try:
        peer.handshake("2025-11-25", "claude-ai")
        tools = [tool["name"] for tool in peer.result("tools/list")["tools"]]
    finally:
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-2000:]
    assert tools == ["mcp_list_tools", "mcp_call_tool", "mcp_add_server", "mcp_remove_server"]
