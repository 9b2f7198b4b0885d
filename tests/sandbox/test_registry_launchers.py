"""Package launchers start real MCP servers from an EMPTY private home over registry-only network.

Marked `registry`: these download real packages from npm and PyPI (through the real filtering
proxy, which resolves and dials only the registry hosts), and run in CI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from sandbox_box import CHILD_PROBE, Box, spawn

from sandbox import FilteringProxy, Launch, finish_launch, home_path

pytestmark = [pytest.mark.bwrap, pytest.mark.registry]
INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
})  # fmt: skip
UVX = shutil.which("uvx") or str(Path(sys.executable).with_name("uvx"))


@pytest.fixture
def proxy() -> Iterator[tuple[FilteringProxy, BlockingPortal]]:
    real = FilteringProxy()
    with start_blocking_portal() as portal:
        task, _ = portal.start_task(real.serve)
        try:
            yield real, portal
        finally:
            task.cancel()


def initialize(launch: Launch, timeout: float = 150) -> dict[str, object]:
    """Spawn, send `initialize`, return the first JSON line the server answers."""
    proc = spawn(launch, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INITIALIZE + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            if line.startswith("{"):
                answer: dict[str, object] = json.loads(line)
                return answer
        raise AssertionError(f"no answer; stderr: {proc.stderr.read() if proc.stderr else ''}")
    finally:
        proc.kill()
        proc.wait(timeout=timeout)
        finish_launch(launch)


def start(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal], command: str, args: list[str], **env: str
) -> Launch:
    launch = box.launch(command, args, server_name=f"reg-{Path(command).name}", server_env=env)
    assert launch.proxy is not None, "a package launcher gets registry-only network by default"
    assert not any(home_path(box.homes, f"reg-{Path(command).name}").iterdir())  # an empty cache
    real, portal = proxy
    portal.call(real.listen, launch.proxy)
    return launch


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed")
def test_npx_server_starts_from_an_empty_home_and_answers_initialize(box: Box, proxy: tuple[FilteringProxy, BlockingPortal]) -> None:
    launch = start(box, proxy, "npx", ["-y", "@modelcontextprotocol/server-everything"])
    answer = initialize(launch)
    assert answer.get("id") == 1 and "result" in answer, answer


@pytest.mark.skipif(not Path(UVX).exists(), reason="uvx is not installed (pip install uv)")
def test_uvx_server_starts_from_an_empty_home_and_answers_initialize(box: Box, proxy: tuple[FilteringProxy, BlockingPortal]) -> None:
    # uv trusts its bundled roots unless told to use the system's (a TLS-inspecting network's CA)
    launch = start(box, proxy, UVX, ["mcp-server-time"], UV_NATIVE_TLS="1")
    answer = initialize(launch)
    assert answer.get("id") == 1 and "result" in answer, answer


def test_registry_child_cannot_reach_host_loopback_nor_a_non_registry_name(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal]
) -> None:
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    real, portal = proxy
    try:
        results = {}
        for action, args in (("connect", ["127.0.0.1", str(listener.getsockname()[1])]),
                             ("proxy_connect", ["evil.example.com", "443"]),
                             ("proxy_connect", ["127.0.0.1", "443"])):  # fmt: skip
            launch = box.launch(box.python, ["-I", str(CHILD_PROBE), action, *args], server_network="registry")
            assert launch.proxy is not None
            portal.call(real.listen, launch.proxy)
            proc = box.run(launch)
            results[(action, args[0])] = json.loads(proc.stdout.splitlines()[-1])
    finally:
        listener.close()
    assert not results[("connect", "127.0.0.1")]["ok"]
    assert "not on this server's network list" in results[("proxy_connect", "evil.example.com")]["detail"]
    assert "IP addresses" in results[("proxy_connect", "127.0.0.1")]["detail"]
