"""The developer's tool policy: refused calls are `forbidden` with the reason and never reach the
server; listings mark what cannot be called; a dynamic entry of the same name cannot shed it.

The downstream server is a real child that records its starts and whose write tools change files.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from bridge_support import BridgeDirs, MakeBridge, error, ok
from helpers import fixture_path

from bridge.models import ToolCatalog, ToolPolicy, ToolSchema
from bridge.tools import Bridge
from bridge.tools import policy as tool_policy


def annotated(dirs: BridgeDirs, **policy: Any) -> dict[str, dict[str, Any]]:
    """config.MCP_SERVERS with the annotated fixture as `notes`, under `policy`."""
    entry = {
        "transport": "stdio",
        "command": sys.executable,
        "args": [fixture_path("annotated"), str(dirs.workspace / "starts.log")],
        "tools": policy,
    }
    return {"notes": entry}


def starts(dirs: BridgeDirs) -> int:
    path = dirs.workspace / "starts.log"
    return len(path.read_text().splitlines()) if path.exists() else 0


def notes(dirs: BridgeDirs) -> str:
    path = dirs.workspace / "notes.txt"
    return path.read_text() if path.exists() else ""


def test_a_denied_name_is_forbidden_before_any_child_starts(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(annotated(bridge_dirs, deny=["write_*", "delete_*"]))
    data = error(bridge.call_tool("notes", "write_note", '{"text": "x"}'), "forbidden")
    assert "deny 'write_*'" in data.message and data.detail["reason"] == data.message.split(": ", 1)[1].rstrip(".")
    assert starts(bridge_dirs) == 0
    ok(bridge.call_tool("notes", "read_notes"))


def test_a_name_outside_the_allow_list_is_forbidden(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(annotated(bridge_dirs, allow=["read_*"]))
    assert "allow list" in error(bridge.call_tool("notes", "delete_notes"), "forbidden").message
    ok(bridge.call_tool("notes", "read_notes"))


def test_read_only_admits_only_tools_annotated_read_only(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(annotated(bridge_dirs, read_only=True))
    (bridge_dirs.workspace / "notes.txt").write_text("keep me\n")
    for tool, arguments in (("write_note", '{"text": "x"}'), ("delete_notes", "{}")):
        assert "readOnlyHint" in error(bridge.call_tool("notes", tool, arguments), "forbidden").message
    assert ok(bridge.call_tool("notes", "read_notes")).text == "keep me\n"
    assert notes(bridge_dirs) == "keep me\n"  # neither refused call ran


def test_listings_mark_the_tools_that_cannot_be_called(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(annotated(bridge_dirs, read_only=True, deny=["delete_*"]))
    reply = ok(bridge.list_tools("notes"))
    assert isinstance(reply.data, ToolCatalog)
    refused = {tool.name: tool.refused for tool in reply.data.tools}
    assert refused["read_notes"] is None
    assert "readOnlyHint" in (refused["write_note"] or "")
    assert "deny 'delete_*'" in (refused["delete_notes"] or "")
    assert "- write_note [not callable]" in reply.text and "- read_notes:" in reply.text
    schema = ok(bridge.list_tools("notes", "write_note"))
    assert isinstance(schema.data, ToolSchema) and schema.data.refused == refused["write_note"]
    assert schema.text.startswith("Not callable here: ")


def test_marks_survive_the_output_budget_like_names(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(annotated(bridge_dirs, deny=["*_note"]), max_chars=200)
    reply = ok(bridge.list_tools("notes"))
    assert isinstance(reply.data, ToolCatalog) and reply.data.truncated  # descriptions gave way
    assert "- write_note [not callable]" in reply.text and "- read_notes\n" in reply.text


def test_a_dynamic_entry_of_the_same_name_cannot_shed_the_policy(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs
) -> None:
    servers = annotated(bridge_dirs, read_only=True)
    bridge = make_bridge(servers)
    entry = servers["notes"]
    ok(bridge.add_server("notes", command=entry["command"], args_json=json.dumps(entry["args"])))
    error(bridge.call_tool("notes", "write_note", '{"text": "x"}'), "forbidden")
    assert notes(bridge_dirs) == ""


def test_no_policy_leaves_every_tool_callable(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    servers = annotated(bridge_dirs)
    del servers["notes"]["tools"]
    bridge: Bridge = make_bridge(servers)
    assert ok(bridge.call_tool("notes", "write_note", '{"text": "x"}')).text == "written"
    assert "[not callable]" not in ok(bridge.list_tools("notes")).text


def test_a_bad_policy_is_a_startup_error(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    with pytest.raises(ValueError, match="notes"):
        make_bridge(annotated(bridge_dirs, allow="read_*", unknown=True))


@pytest.mark.parametrize(
    ("policy", "name", "refused"),
    [
        (ToolPolicy(), "anything", False),
        (ToolPolicy(allow=("get_*",)), "get_user", False),
        (ToolPolicy(allow=("get_*",)), "Get_user", True),  # case-sensitive, like tool names
        (ToolPolicy(allow=("get_*",), deny=("get_secret*",)), "get_secret_key", True),  # deny wins
        (ToolPolicy(deny=("*",)), "x", True),
    ],
)
def test_name_patterns(policy: ToolPolicy, name: str, refused: bool) -> None:
    assert (tool_policy.refused_by_name(policy, name) is not None) is refused



def test_a_registry_file_cannot_carry_a_tool_policy(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    """A policy in a file could only come from outside the developer config: the file is refused."""
    bridge_dirs.registry.parent.mkdir(parents=True, exist_ok=True)
    entry = {"transport": "http", "url": "https://example.com/mcp", "tools": {"allow": ["*"]}}
    bridge_dirs.registry.write_text(json.dumps({"version": 1, "servers": {"planted": entry}}))
    reply = ok(make_bridge().list_tools())
    assert reply.data.servers == [] and "developer-only" in (reply.data.warning or "")
