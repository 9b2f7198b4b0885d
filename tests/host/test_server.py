"""The bridge driven as a host drives it: `mcp-bridge` spawned as a process, spoken to over stdio or HTTP."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
import tty
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from bridge_proc import FOUR_TOOLS as FOUR_TOOLS_IN_ORDER
from bridge_proc import MODERN, StdioPeer, host_env, http_bridge, initialize_params, modern_meta, stdio_bridge
from helpers import fixture_path, pids_with_marker, wait_pids_gone
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = str(Path(sys.executable).with_name("mcp-bridge"))
EVERYTHING = ROOT / "tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FOUR_TOOLS = {"mcp_list_tools", "mcp_call_tool", "mcp_add_server", "mcp_remove_server"}


def call_text(result: object) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_host_sees_exactly_the_four_tools_in_both_eras(dirs: dict[str, str], mode: str) -> None:
    params = StdioServerParameters(command=BRIDGE, env=host_env(dirs))
    async with Client(params, mode=mode) as client:
        tools = await client.list_tools()
        assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert {tool.name for tool in tools.tools} == FOUR_TOOLS
    assert all(tool.output_schema and tool.output_schema["type"] == "object" for tool in tools.tools)


async def test_python_server_py_starts_the_bridge_too(dirs: dict[str, str]) -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(ROOT / "server.py")], env=host_env(dirs))
    async with Client(params) as client:
        tools = await client.list_tools()
    assert {tool.name for tool in tools.tools} == FOUR_TOOLS


async def test_restricted_mode_offers_only_list_and_call(dirs: dict[str, str]) -> None:
    params = StdioServerParameters(command=BRIDGE, env=host_env(dirs, MCP_ALLOW_DYNAMIC="false"))
    async with Client(params) as client:
        tools = await client.list_tools()
    assert {tool.name for tool in tools.tools} == {"mcp_list_tools", "mcp_call_tool"}


async def test_stdio_host_adds_and_calls_a_sandboxed_stdio_server(dirs: dict[str, str]) -> None:
    params = StdioServerParameters(command=BRIDGE, env=host_env(dirs))
    async with Client(params) as client:
        added = await client.call_tool(
            "mcp_add_server", {"name": "echo", "command": sys.executable, "args_json": json.dumps([fixture_path("echo")])}
        )
        assert not added.is_error, call_text(added)
        called = await client.call_tool(
            "mcp_call_tool", {"server": "echo", "tool_name": "add", "arguments_json": '{"a": 2, "b": 40}'}
        )
    assert not called.is_error
    assert called.structured_content is not None
    assert called.structured_content["structured_content"] == {"result": 42}


async def test_error_results_carry_code_and_structured_fields(dirs: dict[str, str]) -> None:
    params = StdioServerParameters(command=BRIDGE, env=host_env(dirs))
    async with Client(params) as client:
        result = await client.call_tool("mcp_call_tool", {"server": "nope", "tool_name": "x", "arguments_json": "{}"})
    assert result.is_error
    assert result.structured_content == {
        "ok": False,
        "code": "unknown_server",
        "retryable": False,
        "message": result.structured_content["message"],
        "detail": {"close_matches": []},
    }
    assert "[unknown_server]" in call_text(result)


async def test_everything_server_from_npm_is_added_and_called_through_the_bridge(dirs: dict[str, str]) -> None:
    assert EVERYTHING.is_file(), "run scripts/test.sh: it installs tests/node"
    node = shutil.which("node")
    assert node is not None
    params = StdioServerParameters(command=BRIDGE, env=host_env(dirs))
    async with Client(params) as client:
        added = await client.call_tool(
            "mcp_add_server",
            {"name": "everything", "command": node, "args_json": json.dumps([str(EVERYTHING), "stdio"])},
        )
        assert not added.is_error, call_text(added)
        catalog = await client.call_tool("mcp_list_tools", {"server": "everything"})
        summed = await client.call_tool(
            "mcp_call_tool", {"server": "everything", "tool_name": "get-sum", "arguments_json": '{"a": 20, "b": 22}'}
        )
    assert "get-sum" in call_text(catalog)
    assert not summed.is_error
    assert "42" in call_text(summed)


class RawStdioHost:
    """Speaks newline-delimited JSON-RPC to the bridge by hand, keeping every byte of its stdout."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: list[bytes] = []
        self._next_id = 0

    def request(self, method: str, params: dict[str, object]) -> dict[str, object]:
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        self.notify_raw(message)
        while True:
            line = self.proc.stdout.readline()  # type: ignore[union-attr]
            assert line, "the bridge closed stdout before answering"
            self.lines.append(line)
            decoded = json.loads(line)
            if decoded.get("id") == self._next_id:
                return decoded

    def notify_raw(self, message: dict[str, object]) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]


@contextmanager
def raw_bridge(dirs: dict[str, str]) -> Iterator[RawStdioHost]:
    proc = subprocess.Popen(
        [BRIDGE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=host_env(dirs)
    )
    try:
        host = RawStdioHost(proc)
        host.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        )
        host.notify_raw({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield host
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_stdout_carries_only_json_rpc_while_a_child_prints_to_its_stdout(dirs: dict[str, str]) -> None:
    with raw_bridge(dirs) as host:
        added = host.request(
            "tools/call",
            {"name": "mcp_add_server", "arguments": {"name": "noisy", "command": sys.executable, "args_json": json.dumps([fixture_path("noisy")])}},
        )
        assert added["result"]["isError"] is False  # type: ignore[index]
        shouted = host.request(
            "tools/call",
            {"name": "mcp_call_tool", "arguments": {"server": "noisy", "tool_name": "shout", "arguments_json": '{"text": "hi"}'}},
        )
        assert shouted["result"]["isError"] is False  # type: ignore[index]
        host.proc.stdin.close()  # type: ignore[union-attr]
        host.lines.extend(host.proc.stdout.readlines())  # type: ignore[union-attr]
        assert host.proc.wait(timeout=30) == 0
    assert host.lines
    for line in host.lines:
        assert json.loads(line)["jsonrpc"] == "2.0", line
    assert not any(b"not json-rpc" in line for line in host.lines)


def test_bridge_exits_when_stdin_closes(dirs: dict[str, str]) -> None:
    with raw_bridge(dirs) as host:
        host.proc.stdin.close()  # type: ignore[union-attr]
        assert host.proc.wait(timeout=30) == 0


# --- the stdio wire: pipes and sockets on the event loop, anything else through the SDK -------


def test_ctrl_c_stops_a_stdio_bridge_at_once_and_its_children_with_it(dirs: dict[str, str]) -> None:
    """SIGINT used to wait for one more line on stdin: the SDK's stdin reader is a thread, deaf to cancellation."""
    marker = f"marker-{uuid.uuid4().hex}"
    with stdio_bridge(host_env(dirs)) as peer:
        peer.handshake()
        echo = {"name": "echo", "command": sys.executable, "args_json": json.dumps([fixture_path("echo"), marker])}
        assert peer.result("tools/call", {"name": "mcp_add_server", "arguments": echo})["isError"] is False
        call = {"server": "echo", "tool_name": "echo", "arguments_json": '{"text": "hi"}'}
        called = peer.result("tools/call", {"name": "mcp_call_tool", "arguments": call})
        children = pids_with_marker(marker)
        peer.proc.send_signal(signal.SIGINT)
        exit_code = peer.proc.wait(timeout=30)  # stdin stays open: only the signal can end it
    assert called["isError"] is False
    assert children
    assert exit_code == 0  # a clean stop
    assert wait_pids_gone(children, timeout=30) == set()


async def test_messages_larger_than_a_pipe_buffer_cross_stdio_whole_both_ways(dirs: dict[str, str]) -> None:
    text = "".join(f"{n:07d}," for n in range(40_000))  # 320 kB: many reads in, many partial writes out
    params = StdioServerParameters(command=BRIDGE, env=host_env(dirs, MCP_MAX_CHARS="1000000"))
    async with Client(params) as client:
        added = await client.call_tool(
            "mcp_add_server", {"name": "echo", "command": sys.executable, "args_json": json.dumps([fixture_path("echo")])}
        )
        assert not added.is_error, call_text(added)
        with anyio.fail_after(60):  # a line cut short would leave the client waiting for ever
            echoed = await client.call_tool(
                "mcp_call_tool", {"server": "echo", "tool_name": "echo", "arguments_json": json.dumps({"text": text})}
            )
    assert not echoed.is_error
    assert call_text(echoed) == text


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads the bridge's descriptors from /proc")
def test_while_serving_stdio_fd_0_reads_the_null_device_and_fd_1_writes_to_stderr(dirs: dict[str, str]) -> None:
    """So a stray print or an inherited descriptor can never reach the wire (as the SDK's stdio does)."""
    stderr_path = Path(dirs["MCP_WORKSPACE"]) / "bridge-stderr.log"
    with stderr_path.open("wb") as stderr:
        proc = subprocess.Popen([BRIDGE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=host_env(dirs))
    host = RawStdioHost(proc)
    try:
        initialized = host.request("initialize", initialize_params("2025-11-25"))
        descriptors = {fd: os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in (0, 1, 2)}
        listed = host.request("tools/list", {})
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
    assert "result" in initialized
    assert descriptors[0] == os.devnull
    assert descriptors[1] == descriptors[2] == str(stderr_path)
    assert [tool["name"] for tool in listed["result"]["tools"]] == FOUR_TOOLS_IN_ORDER  # type: ignore[index]


def test_a_terminal_on_stdout_is_served_through_the_sdk_stdio(dirs: dict[str, str]) -> None:
    controller, terminal = pty.openpty()
    tty.setraw(terminal)  # the line discipline must not turn "\n" into "\r\n"
    proc = subprocess.Popen([BRIDGE], stdin=subprocess.PIPE, stdout=terminal, stderr=subprocess.DEVNULL, env=host_env(dirs))
    os.close(terminal)
    try:
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params("2025-11-25")}
        proc.stdin.write(json.dumps(request).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        received = b""
        while b"\n" not in received:
            assert select.select([controller], [], [], 60)[0], "no answer within 60 s"
            chunk = os.read(controller, 65536)
            assert chunk, "the bridge closed the terminal before answering"
            received += chunk
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
    answer = json.loads(received.split(b"\n")[0])
    assert answer["id"] == 1
    assert answer["result"]["protocolVersion"] == "2025-11-25"


async def test_http_mode_serves_the_four_tools_at_exactly_mcp(dirs: dict[str, str]) -> None:
    with http_bridge(host_env(dirs)) as served:
        assert served.url.startswith("http://127.0.0.1:")
        async with Client(served.url) as client:
            tools = await client.list_tools()
            added = await client.call_tool(
                "mcp_add_server", {"name": "echo", "command": sys.executable, "args_json": json.dumps([fixture_path("echo")])}
            )
            echoed = await client.call_tool(
                "mcp_call_tool", {"server": "echo", "tool_name": "echo", "arguments_json": '{"text": "over http"}'}
            )
    assert {tool.name for tool in tools.tools} == FOUR_TOOLS
    assert not added.is_error
    assert call_text(echoed) == "over http"


async def test_sigterm_stops_an_http_bridge_its_children_with_it_and_keeps_its_audit_lines(
    dirs: dict[str, str],
) -> None:
    """HTTP is served on the worker loop (no thread hop a call), so uvicorn no longer takes SIGTERM:
    the bridge does, stops uvicorn as uvicorn stops itself, closes as on Ctrl-C, and exits 0."""
    marker = f"marker-{uuid.uuid4().hex}"
    with http_bridge(host_env(dirs)) as served:
        async with Client(served.url) as client:
            echo = {"name": "echo", "command": sys.executable, "args_json": json.dumps([fixture_path("echo"), marker])}
            assert not (await client.call_tool("mcp_add_server", echo)).is_error
            call = {"server": "echo", "tool_name": "echo", "arguments_json": '{"text": "hi"}'}
            assert call_text(await client.call_tool("mcp_call_tool", call)) == "hi"
        children = pids_with_marker(marker)
        served.proc.send_signal(signal.SIGTERM)
        exit_code = served.proc.wait(timeout=30)
    assert children
    assert exit_code == 0
    assert "Traceback" not in served.stderr
    assert wait_pids_gone(children, timeout=30) == set()
    audited = (Path(dirs["MCP_STATE_DIR"]) / "audit" / "audit.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in audited][-2:] == ["mcp_add_server", "mcp_call_tool"]


def test_http_mode_refuses_a_public_bind_without_authentication(dirs: dict[str, str]) -> None:
    done = subprocess.run(
        [BRIDGE, "--transport", "http", "--host", "0.0.0.0", "--port", "0"],
        env=host_env(dirs),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "without authentication" in done.stderr


def test_an_out_of_bounds_setting_stops_the_bridge_with_a_clear_message(dirs: dict[str, str]) -> None:
    done = subprocess.run(
        [BRIDGE], env=host_env(dirs, MCP_TIMEOUT="0"), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 2
    assert "invalid configuration" in done.stderr and "timeout" in done.stderr
    assert done.stdout == ""


# --- a client that probes with server/discover, then sends initialize anyway ------------------
# claude-code#96183, copilot-cli#4525: the SDK alone answers that initialize with -32022 and the
# host shows no tools. The bridge ends the 2026-07-28 exchange and serves the handshake era from there.


def test_initialize_after_server_discover_on_one_stdio_connection_is_served(dirs: dict[str, str]) -> None:
    with stdio_bridge(host_env(dirs)) as peer:
        discovered = peer.result("server/discover", {"_meta": modern_meta("claude-code")})
        initialized = peer.handshake("2025-11-25", "claude-code")
        tools = peer.result("tools/list")["tools"]
        listed = peer.result("tools/call", {"name": "mcp_list_tools", "arguments": {}})
    assert discovered["supportedVersions"] == [MODERN]
    assert initialized["protocolVersion"] == "2025-11-25"
    assert [tool["name"] for tool in tools] == FOUR_TOOLS_IN_ORDER
    assert listed["isError"] is False


def test_a_2026_request_sent_just_before_the_late_initialize_is_answered_first(dirs: dict[str, str]) -> None:
    with stdio_bridge(host_env(dirs)) as peer:
        meta = modern_meta("claude-code")
        peer.send({"jsonrpc": "2.0", "id": "modern", "method": "tools/list", "params": {"_meta": meta}})
        peer.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": initialize_params("2025-06-18")})
        answers = [json.loads(peer.proc.stdout.readline()) for _ in range(2)]  # type: ignore[union-attr]
    assert [answer["id"] for answer in answers] == ["modern", "init"]
    assert len(answers[0]["result"]["tools"]) == 4
    assert answers[1]["result"]["protocolVersion"] == "2025-06-18"


def test_a_cancelled_2026_call_does_not_hold_up_the_late_initialize(dirs: dict[str, str]) -> None:
    with stdio_bridge(host_env(dirs)) as peer:
        meta = modern_meta("claude-code")
        echo = {"name": "echo", "command": sys.executable, "args_json": json.dumps([fixture_path("echo")])}
        peer.result("tools/call", {"name": "mcp_add_server", "arguments": echo, "_meta": meta})
        slow = {"server": "echo", "tool_name": "slow", "arguments_json": '{"seconds": 50}'}
        call = {"name": "mcp_call_tool", "arguments": slow, "_meta": meta}
        peer.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call", "params": call})
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow", "_meta": meta}})
        started = time.monotonic()
        initialized = peer.handshake("2025-11-25", "claude-code")
        waited = time.monotonic() - started
        peer.proc.kill()  # the cancelled call's worker thread would keep it alive for the rest of the 50 s
    assert initialized["protocolVersion"] == "2025-11-25"
    assert waited < 20  # not the 50 s the cancelled call would have taken


def test_a_handshake_era_connection_still_refuses_a_2026_request(dirs: dict[str, str]) -> None:
    with stdio_bridge(host_env(dirs)) as peer:
        peer.handshake("2025-11-25")
        refused = peer.request("tools/list", {"_meta": modern_meta()})
    assert refused["error"]["code"] == -32600


# --- a downstream tool that only runs as a task ----------------------------------------------


def direct_tools(command: list[str]) -> dict[str, dict[str, object]]:
    """The server's own tools/list in the handshake era, asked without the bridge in between."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        peer = StdioPeer(proc)
        peer.handshake("2025-11-25")
        return {tool["name"]: tool for tool in peer.result("tools/list")["tools"]}
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()  # type: ignore[union-attr]
        proc.stdout.close()  # type: ignore[union-attr]


def test_a_task_only_downstream_tool_runs_as_a_task_relaying_its_progress(dirs: dict[str, str]) -> None:
    everything = ["/usr/bin/node", str(EVERYTHING), "stdio"]
    sent = direct_tools(everything)["simulate-research-query"]
    with stdio_bridge(host_env(dirs, MCP_TIMEOUT="60")) as peer:
        peer.handshake()
        added = {"name": "everything", "command": everything[0], "args_json": json.dumps(everything[1:])}
        assert peer.result("tools/call", {"name": "mcp_add_server", "arguments": added})["isError"] is False
        task_only = {"server": "everything", "tool_name": "simulate-research-query"}
        shown = peer.result("tools/call", {"name": "mcp_list_tools", "arguments": task_only})
        call = {**task_only, "arguments_json": '{"topic": "tides"}'}
        called = peer.result("tools/call", {"name": "mcp_call_tool", "arguments": call, "_meta": {"progressToken": "t1"}})
    assert sent["execution"] == {"taskSupport": "required"}
    assert shown["structuredContent"]["tool"] == sent
    assert called["isError"] is False, called
    assert "Research Report: tides" in called["content"][0]["text"]
    progress = [n["params"] for n in peer.notifications if n["method"] == "notifications/progress"]
    assert progress and all(params["progressToken"] == "t1" for params in progress)
    assert progress[0]["message"] == "Gathering sources..."
