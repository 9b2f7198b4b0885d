"""Every JSON-RPC request a host sends over stdio gets an answer, whatever its strings and nesting.

A real bridge process is driven over real stdio with raw JSON lines, as a host writes them. A lone
surrogate escape (`"\\ud800"`) and nesting past the parser's limit made the SDK drop the line, and the
host waited forever; now the tools' validation answers `invalid_argument` for a lone surrogate in
`tool_name`, `cwd` or `result_handle` and for arguments nested past 100 levels, and a line nested
too deep for any parser is answered with a JSON-RPC error under its id. Each beside its plain twin.
"""

from __future__ import annotations

import json
import select
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from bridge_proc import StdioPeer, host_env, stdio_bridge, workdirs
from helpers import fixture_path

TIMEOUT_S = 10
BOUND_S = TIMEOUT_S + 10  # MCP_TIMEOUT plus a grace for a loaded machine: the spec's bound, not a benchmark
SERVER = "old"


@pytest.fixture(scope="module")
def peer() -> Iterator[StdioPeer]:
    with workdirs() as dirs, stdio_bridge(host_env(dirs, MCP_TIMEOUT=str(TIMEOUT_S))) as peer:
        peer.handshake()
        added = call(peer, "mcp_add_server", {"name": SERVER, "command": sys.executable, "args_json": json.dumps([fixture_path("handshake_era")])})
        assert not added["result"]["isError"], added
        yield peer


_ids = iter(range(1000, 10**6))


def answer(peer: StdioPeer, line: bytes, request_id: int) -> dict[str, Any]:
    """Write one raw line; the answer to `request_id`, which must come within the bound."""
    peer.proc.stdin.write(line + b"\n")  # type: ignore[union-attr]
    peer.proc.stdin.flush()  # type: ignore[union-attr]
    deadline = time.monotonic() + BOUND_S
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([peer.proc.stdout], [], [], left)
        if not ready:
            break
        got = peer.proc.stdout.readline()  # type: ignore[union-attr]
        assert got, "the bridge closed stdout"
        message = json.loads(got)
        if message.get("id") == request_id:
            return message
    raise AssertionError(f"no answer to request {request_id} within {BOUND_S} s")


def call(peer: StdioPeer, tool: str, arguments: dict[str, Any], *, raw_arguments_json: bytes | None = None) -> dict[str, Any]:
    request_id = next(_ids)
    params = {"name": tool, "arguments": arguments}
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()
    if raw_arguments_json is not None:  # spliced in as the JSON value itself, not as a string
        line = line.replace(b'"arguments_json": null', b'"arguments_json": ' + raw_arguments_json)
    return answer(peer, line, request_id)


def code(reply: dict[str, Any]) -> str:
    assert "result" in reply, reply
    return reply["result"]["structuredContent"].get("code", "ok")


def nested(depth: int) -> str:
    """An arguments object `depth` levels deep in all (the object itself is level 1)."""
    return '{"text": "hi", "nested": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def test_a_plain_tool_name_is_called(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "echo", "arguments_json": '{"text": "hi"}'})
    assert code(reply) == "ok"


def test_a_lone_surrogate_in_tool_name_is_an_invalid_argument(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "\ud800", "arguments_json": "{}"})
    assert code(reply) == "invalid_argument"


def test_a_plain_cwd_is_taken(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_add_server", {"name": "plaincwd", "command": sys.executable, "cwd": "."})
    assert code(reply) == "ok"


def test_a_lone_surrogate_in_cwd_is_an_invalid_argument(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_add_server", {"name": "badcwd", "command": sys.executable, "cwd": "\ud800"})
    assert code(reply) == "invalid_argument"


def test_a_plain_result_handle_is_looked_up(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "echo", "result_handle": "r-none", "offset": 0})
    assert code(reply) == "invalid_argument"
    assert "names no result kept" in reply["result"]["structuredContent"]["message"]


def test_a_lone_surrogate_in_result_handle_is_an_invalid_argument(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "echo", "result_handle": "\ud800", "offset": 0})
    assert code(reply) == "invalid_argument"
    assert "result_handle must be" in reply["result"]["structuredContent"]["message"]


def test_arguments_nested_100_levels_are_passed_on(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "echo", "arguments_json": nested(100)})
    assert code(reply) == "ok"


@pytest.mark.parametrize("depth", [101, 200_000])
def test_arguments_json_nested_past_100_levels_is_an_invalid_argument(peer: StdioPeer, depth: int) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "echo", "arguments_json": nested(depth)})
    assert code(reply) == "invalid_argument"
    assert "nests deeper than 100 levels" in reply["result"]["structuredContent"]["message"]


def test_arguments_as_an_object_nested_100_levels_are_passed_on(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "echo", "arguments_json": None}, raw_arguments_json=nested(100).encode())
    assert code(reply) == "ok"


def test_arguments_as_an_object_past_the_sdks_parser_are_an_invalid_argument(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "echo", "arguments_json": None}, raw_arguments_json=nested(500).encode())
    assert code(reply) == "invalid_argument"


def test_a_request_nested_past_every_parser_is_answered_under_its_id(peer: StdioPeer) -> None:
    reply = call(peer, "mcp_call_tool", {"server": SERVER, "tool_name": "echo", "arguments_json": None}, raw_arguments_json=nested(200_000).encode())
    assert reply["error"]["code"] == -32602
    assert "invalid_argument" in reply["error"]["message"]


def test_a_json_line_that_is_no_valid_request_is_answered_under_its_id(peer: StdioPeer) -> None:
    reply = answer(peer, b'{"jsonrpc": "1.0", "id": 77, "method": "ping"}', 77)
    assert reply["error"]["code"] == -32600


def test_the_bridge_serves_on_after_them(peer: StdioPeer) -> None:
    assert answer(peer, b'{"jsonrpc": "2.0", "id": 78, "method": "ping"}', 78) == {"jsonrpc": "2.0", "id": 78, "result": {}}
