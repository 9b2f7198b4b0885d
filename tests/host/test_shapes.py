"""The bridge's four tools as each host receives them: ChatGPT's complete draft-07 shape for OpenAI's
client, a strict 2020-12 shape for everyone else, in both protocol eras.

Golden files: UPDATE_GOLDEN=1 rewrites tests/golden/*; review the diff.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from bridge_proc import (
    FOUR_TOOLS,
    MODERN,
    StdioPeer,
    host_env,
    http_bridge,
    http_peer,
    modern_meta,
    stdio_bridge,
    workdirs,
)
from helpers import fixture_path
from jsonschema import Draft7Validator, Draft202012Validator

from bridge.host import shapes

GOLDEN = Path(__file__).with_name("golden")
CLAUDE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANNOTATIONS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
# OpenAI's meanings: read-only = changes nothing; destructive = may delete or overwrite; open world =
# reaches beyond this system. Calling can do whatever the downstream tool does.
HONEST_ANNOTATIONS = {
    "mcp_list_tools": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": True},
    "mcp_call_tool": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True},
    "mcp_add_server": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False},
    "mcp_remove_server": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False},
}
CLIENT_FOR_SHAPE = {"chatgpt": "openai-mcp", "standard": "claude-ai"}
VALIDATOR_FOR_SHAPE = {"chatgpt": Draft7Validator, "standard": Draft202012Validator}


# --- choosing the shape ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "labels",
    [["openai-mcp", None, None], [None, "OpenAI-MCP/1.0.0", None], [None, None, "openai-mcp/1.0.0"]],
)
def test_auto_picks_chatgpt_when_any_label_names_openai_mcp(labels: list[str | None]) -> None:
    assert shapes.choose_shape("auto", labels) == "chatgpt"


@pytest.mark.parametrize("labels", [["claude-ai", None, None], [None, None, "python-httpx/0.28"], []])
def test_auto_picks_standard_for_every_other_client(labels: list[str | None]) -> None:
    assert shapes.choose_shape("auto", labels) == "standard"


def test_the_setting_overrides_what_the_client_says() -> None:
    assert shapes.choose_shape("standard", ["openai-mcp"]) == "standard"
    assert shapes.choose_shape("chatgpt", ["claude-ai"]) == "chatgpt"


# --- the shapes on the wire ------------------------------------------------------------------


def listed_over_stdio(env: dict[str, str], client_name: str, era: str = "2025-11-25") -> list[dict[str, Any]]:
    """The raw `tools/list` answer, opened with `initialize` at `era` or with `server/discover`."""
    with stdio_bridge(env) as peer:
        if era == MODERN:
            meta = modern_meta(client_name)
            peer.result("server/discover", {"_meta": meta})
            return peer.result("tools/list", {"_meta": meta})["tools"]
        peer.handshake(era, client_name)
        return peer.result("tools/list")["tools"]


@pytest.fixture(scope="module")
def wire() -> Iterator[dict[str, list[dict[str, Any]]]]:
    """Each shape's `tools/list` exactly as sent to a handshake-era client over stdio."""
    with workdirs() as dirs:
        yield {shape: listed_over_stdio(host_env(dirs), client) for shape, client in CLIENT_FOR_SHAPE.items()}


def all_tools(wire: dict[str, list[dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for shape, tools in wire.items():
        for tool in tools:
            yield shape, tool


@pytest.mark.parametrize("shape", ["chatgpt", "standard"])
def test_tools_list_matches_its_golden_file(wire: dict[str, list[dict[str, Any]]], shape: str) -> None:
    golden = GOLDEN / f"tools_{shape}.json"
    text = json.dumps(wire[shape], indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()


def test_both_shapes_offer_the_four_tools_in_a_fixed_order_with_claude_safe_names(
    wire: dict[str, list[dict[str, Any]]],
) -> None:
    for tools in wire.values():
        assert [tool["name"] for tool in tools] == FOUR_TOOLS
        assert all(CLAUDE_NAME.match(tool["name"]) for tool in tools)


def test_every_tool_has_a_title_a_description_and_all_four_honest_annotations(
    wire: dict[str, list[dict[str, Any]]],
) -> None:
    for _, tool in all_tools(wire):
        assert tool["title"] and tool["description"]
        assert tool["annotations"] == HONEST_ANNOTATIONS[tool["name"]]
        assert set(ANNOTATIONS) <= set(tool["annotations"])


def test_chatgpt_shape_declares_draft07_on_both_schemas_and_forbids_tasks(wire: dict[str, list[dict[str, Any]]]) -> None:
    for tool in wire["chatgpt"]:
        assert tool["inputSchema"]["$schema"] == shapes.DRAFT_07
        assert tool["outputSchema"]["$schema"] == shapes.DRAFT_07
        assert tool["execution"] == {"taskSupport": "forbidden"}


def test_standard_shape_declares_no_dialect_and_no_execution(wire: dict[str, list[dict[str, Any]]]) -> None:
    for tool in wire["standard"]:
        assert "$schema" not in tool["inputSchema"]
        assert "$schema" not in tool["outputSchema"]
        assert "execution" not in tool


def test_every_schema_is_valid_in_its_dialect(wire: dict[str, list[dict[str, Any]]]) -> None:
    for shape, tool in all_tools(wire):
        validator = VALIDATOR_FOR_SHAPE[shape]
        for schema in (tool["inputSchema"], tool["outputSchema"]):
            validator.check_schema(schema)
            assert jsonschema.validators.validator_for(schema, default=Draft202012Validator) is validator
            assert schema["type"] == "object"


def test_schemas_are_self_contained_so_both_dialects_read_them_alike(wire: dict[str, list[dict[str, Any]]]) -> None:
    for _, tool in all_tools(wire):
        text = json.dumps([tool["inputSchema"], tool["outputSchema"]])
        assert "$ref" not in text and "$defs" not in text and "definitions" not in text
        assert "prefixItems" not in text and '"items": [' not in text


def test_every_input_schema_stays_under_16_kib(wire: dict[str, list[dict[str, Any]]]) -> None:
    for _, tool in all_tools(wire):
        assert len(json.dumps(tool["inputSchema"]).encode()) < 16 * 1024


# Every conversation pays for the four definitions before its first word: 12,491 characters in
# full (two thirds output schemas), halved by `bridge.host.schemas`.
TOOLS_BUDGET = 6_000


@pytest.mark.parametrize("shape", ["chatgpt", "standard"])
def test_the_four_tools_fit_the_budget_in_each_host_shape(wire: dict[str, list[dict[str, Any]]], shape: str) -> None:
    assert len(json.dumps(wire[shape])) <= TOOLS_BUDGET


def descriptions(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield value
            yield from descriptions(value)
    elif isinstance(node, list):
        for item in node:
            yield from descriptions(item)


def test_no_description_is_said_twice(wire: dict[str, list[dict[str, Any]]]) -> None:
    for tools in wire.values():
        said = list(descriptions(tools))
        assert len(said) == len(set(said))
        assert not {tool["title"] for tool in tools} & set(said)


# --- real results against both shapes' output schemas ---------------------------------------


def structured_results(peer: StdioPeer) -> list[tuple[str, dict[str, Any]]]:
    """One real result of every kind each tool returns, successes and errors, a cut result and its next part."""
    echo = json.dumps([fixture_path("echo")])

    def call(name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return name, peer.result("tools/call", {"name": name, "arguments": arguments})["structuredContent"]

    results = [
        call("mcp_list_tools", {}),
        call("mcp_add_server", {"name": "echo", "command": sys.executable, "args_json": echo}),
        call("mcp_add_server", {"name": "bad name!", "command": sys.executable}),
        call("mcp_list_tools", {"server": "echo"}),
        call("mcp_list_tools", {"server": "echo", "tool_name": "add"}),
        call("mcp_list_tools", {"server": "nope"}),
        call("mcp_list_tools", {"query": "add two numbers", "limit": 3}),
        call("mcp_list_tools", {"query": "add", "limit": 0}),
        call("mcp_call_tool", {"server": "echo", "tool_name": "add", "arguments_json": '{"a": 1, "b": 2}'}),
        call("mcp_call_tool", {"server": "echo", "tool_name": "image"}),
        call("mcp_call_tool", {"server": "echo", "tool_name": "fail", "arguments_json": '{"message": "no"}'}),
    ]
    _, cut = call("mcp_call_tool", {"server": "echo", "tool_name": "big", "arguments_json": '{"n": 10000}'})
    read_on = {"result_handle": cut["result_handle"], "offset": cut["next_offset"]}
    _, page = call("mcp_call_tool", {"server": "echo", "tool_name": "big", **read_on})
    assert page["ok"] and page["offset"] == cut["next_offset"]
    results += [("mcp_call_tool", cut), ("mcp_call_tool", page)]
    return [*results, call("mcp_remove_server", {"name": "echo"}), call("mcp_remove_server", {"name": "echo"})]


def test_real_results_validate_against_the_output_schema_of_both_shapes(wire: dict[str, list[dict[str, Any]]]) -> None:
    with workdirs() as dirs, stdio_bridge(host_env(dirs)) as peer:
        peer.handshake()
        results = structured_results(peer)
    assert {data["ok"] for _, data in results} == {True, False}
    found = next(data for name, data in results if "matches" in data)
    assert found["matches"][0]["tool"] == "add" and found["servers_searched"] == ["echo"]
    for shape, tools in wire.items():
        schemas = {tool["name"]: tool["outputSchema"] for tool in tools}
        for name, data in results:
            VALIDATOR_FOR_SHAPE[shape](schemas[name]).validate(data)


# --- eras, overrides and identification -----------------------------------------------------


@pytest.mark.parametrize("era", ["2025-06-18", "2025-11-25", MODERN])
def test_every_era_gets_the_same_four_tools_over_stdio(wire: dict[str, list[dict[str, Any]]], era: str) -> None:
    with workdirs() as dirs:
        tools = listed_over_stdio(host_env(dirs), "claude-ai", era)
    assert tools == wire["standard"]


def test_chatgpt_is_recognised_by_its_client_info_in_the_2026_era_too(wire: dict[str, list[dict[str, Any]]]) -> None:
    with workdirs() as dirs:
        tools = listed_over_stdio(host_env(dirs), "openai-mcp", MODERN)
    # The 2026-07-28 Tool type has no `execution`: everything else is ChatGPT's shape.
    assert tools == [{key: value for key, value in tool.items() if key != "execution"} for tool in wire["chatgpt"]]


@pytest.mark.parametrize("era", ["2025-06-18", "2025-11-25", MODERN])
def test_every_era_gets_the_same_four_tools_over_http(wire: dict[str, list[dict[str, Any]]], era: str) -> None:
    with workdirs() as dirs, http_bridge(host_env(dirs)) as bridge, http_peer(bridge.url) as peer:
        if era == MODERN:
            peer.speak_modern()
            meta = modern_meta("claude-ai")
            peer.request("server/discover", {"_meta": meta})
            tools = peer.request("tools/list", {"_meta": meta})["tools"]
        else:
            peer.handshake(era, "claude-ai")
            tools = peer.request("tools/list")["tools"]
    assert tools == wire["standard"]


def test_chatgpt_is_recognised_by_its_user_agent_over_http(wire: dict[str, list[dict[str, Any]]]) -> None:
    with workdirs() as dirs, http_bridge(host_env(dirs)) as bridge:
        with http_peer(bridge.url, {"User-Agent": "openai-mcp/1.0.0"}) as peer:
            peer.handshake("2025-06-18", "unnamed")
            tools = peer.request("tools/list")["tools"]
    assert tools == wire["chatgpt"]


@pytest.mark.parametrize(("setting", "client", "shape"), [("chatgpt", "claude-ai", "chatgpt"), ("standard", "openai-mcp", "standard")])
def test_mcp_tool_shape_overrides_the_client(
    wire: dict[str, list[dict[str, Any]]], setting: str, client: str, shape: str
) -> None:
    with workdirs() as dirs:
        tools = listed_over_stdio(host_env(dirs, MCP_TOOL_SHAPE=setting), client)
    assert tools == wire[shape]
