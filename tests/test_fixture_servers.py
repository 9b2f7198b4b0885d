"""Quick checks that each fixture server in tests/servers behaves as documented, driven with the
plain MCP SDK client (no bridge involved), over stdio and Streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from helpers import (
    descendants,
    fixture_path,
    pids_with_marker,
    start_http_fixture,
    wait_pids_gone,
)
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


def stdio(script: str, *args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[fixture_path(script), *args], env=env)


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The non-group exceptions inside (possibly nested) exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaf_errors(sub)]
    return [exc]


async def check_echo_basics(client: Client) -> None:
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert names == {"echo", "add", "big", "slow", "fail", "image", "env", "cwd"}
    result = await client.call_tool("echo", {"text": "hello"})
    assert not result.is_error and result.content[0].text == "hello"
    result = await client.call_tool("add", {"a": 2, "b": 40})
    assert result.structured_content == {"result": 42}


async def test_echo_stdio(tmp_path):
    async with Client(stdio("echo", env={"FIXTURE_SECRET": "s3cret"}), mode="auto") as client:
        await check_echo_basics(client)

        big = await client.call_tool("big", {"n": 5000})
        assert len(big.content[0].text) == 5000 and big.content[0].text.endswith("<END-OF-BIG>")

        assert (await client.call_tool("slow", {"seconds": 0.01})).content[0].text == "slept"

        failed = await client.call_tool("fail", {"message": "boom on purpose"})
        assert failed.is_error and "boom on purpose" in failed.content[0].text

        image = await client.call_tool("image", {})
        assert image.content[0].type == "image" and image.content[0].mime_type == "image/png"

        env = (await client.call_tool("env", {})).structured_content
        assert env["FIXTURE_SECRET"] == "s3cret"

        assert (await client.call_tool("cwd", {})).structured_content == {"result": os.getcwd()}


async def test_echo_http():
    with start_http_fixture("echo") as (base, proc):
        async with Client(base + "/mcp", mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            await check_echo_basics(client)
        async with Client(base + "/mcp", mode="legacy") as client:
            assert client.protocol_version.startswith("2025-")
            await check_echo_basics(client)
        assert proc.poll() is None
    assert proc.returncode is not None


async def test_handshake_era_auto_falls_back():
    async with Client(stdio("handshake_era"), mode="auto") as client:
        assert client.protocol_version.startswith("2025-")
        assert client.server_info is not None and client.server_info.name == "handshake-era"
        assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
        result = await client.call_tool("echo", {"text": "hi"})
        assert result.content[0].text == "handshake-era: hi"


async def test_noisy_stdio_still_works():
    async with Client(stdio("noisy"), mode="legacy") as client:
        assert (await client.call_tool("shout", {"text": "hey"})).content[0].text == "HEY"


async def test_many_tools_count():
    async with Client(stdio("many_tools", env={"FIXTURE_TOOL_COUNT": "7"})) as client:
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools] == [f"tool_{i:04d}" for i in range(7)]
        assert all(len(tool.description) >= 150 for tool in tools)
        assert (await client.call_tool("tool_0006", {"x": 3})).content[0].text == "tool_0006: 3"


def test_crash_at_start_exits_3():
    done = subprocess.run([sys.executable, fixture_path("crash_at_start")], capture_output=True, text=True, timeout=30)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == "fatal: fixture crashed on purpose"


async def test_crash_at_start_client_sees_closed_connection():
    with pytest.raises(BaseException) as info:
        async with Client(stdio("crash_at_start"), mode="legacy"):
            pass
    assert any(isinstance(e, MCPError) for e in leaf_errors(info.value))


async def test_hang_times_out_and_leaves_nothing():
    marker = f"hang-marker-{os.getpid()}"
    with pytest.raises(BaseException) as info:
        async with Client(stdio("hang", marker, "--exit-on-eof"), mode="legacy", read_timeout_seconds=0.3):
            pass
    assert any(isinstance(e, MCPError) and e.error.code == -32001 for e in leaf_errors(info.value))
    assert pids_with_marker(marker) == set()


def test_forking_group_kill(tmp_path):
    marker = f"forking-marker-{os.getpid()}"
    pid_file = tmp_path / "grandchild.pid"
    proc = subprocess.Popen(
        [sys.executable, fixture_path("forking"), marker],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "FIXTURE_PID_FILE": str(pid_file)},
        start_new_session=True,
    )
    try:
        line = proc.stderr.readline().decode()
        grandchild = int(line.split()[-1])
        assert int(pid_file.read_text()) == grandchild
        assert descendants(proc.pid) == {grandchild}
        assert pids_with_marker(marker) == {proc.pid, grandchild}
        proc.terminate()  # ignored by design
        assert wait_pids_gone([proc.pid], 0.2) == {proc.pid}
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
        proc.stdin.close()
        proc.stderr.close()
    assert wait_pids_gone([grandchild], 10) == set()
    assert pids_with_marker(marker) == set()


def test_http_errors():
    def status(url: str) -> tuple[int, str]:
        request = urllib.request.Request(url, data=b"{}", method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers["Content-Type"]
        except urllib.error.HTTPError as e:
            return e.code, e.headers["Content-Type"]

    with start_http_fixture("http_errors") as (base, _proc):
        for code in (401, 403, 404, 500):
            assert status(f"{base}/status/{code}")[0] == code
        assert status(f"{base}/html") == (200, "text/html; charset=utf-8")
        assert status(f"{base}/mcp")[0] == 404
