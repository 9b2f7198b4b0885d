"""`mcp_list_tools(query=...)`: the tools of every server ranked from the kept index, with real
stdio children and real HTTP servers in both registry layers.

The annotated fixture records each start in a file, so a test sees whether a search started it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from bridge_support import BridgeDirs, MakeBridge, StdioArgs, error, ok
from helpers import fixture_path, start_http_fixture

from bridge.models import SearchResult
from bridge.tools import Reply
from bridge.tools.finding import REVALIDATE_AFTER_S, STILL_STARTING


@pytest.fixture(scope="module")
def http_echo_url() -> Iterator[str]:
    with start_http_fixture("echo.py") as (base_url, _):
        yield base_url + "/mcp"


def notes_entry(dirs: BridgeDirs, **policy: Any) -> dict[str, dict[str, Any]]:
    """config.MCP_SERVERS: the annotated fixture as `notes` (a stdio child that logs its starts)."""
    entry = {"transport": "stdio", "command": sys.executable, "args": [fixture_path("annotated"), str(dirs.workspace / "starts.log")]}
    return {"notes": {**entry, "tools": policy} if policy else entry}


def starts(dirs: BridgeDirs) -> int:
    path = dirs.workspace / "starts.log"
    return len(path.read_text().splitlines()) if path.exists() else 0


def found(reply: Reply) -> SearchResult:
    ok(reply)
    assert isinstance(reply.data, SearchResult), reply.text
    return reply.data


def pairs(result: SearchResult) -> list[str]:
    return [f"{match.server}/{match.tool}" for match in result.matches]


def test_a_search_before_any_session_lists_both_layers_and_ranks_across_them(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, http_echo_url: str
) -> None:
    bridge = make_bridge(notes_entry(bridge_dirs))
    ok(bridge.add_server("web", url=http_echo_url))
    result = found(bridge.list_tools(query="append a note"))
    assert pairs(result)[0] == "notes/write_note"
    assert result.servers_searched == ["notes", "web"] and result.servers_not_indexed == []
    assert pairs(found(bridge.list_tools(query="echo the text back")))[0] == "web/echo"
    text = bridge.list_tools(query="append a note", limit=1).text
    assert text.splitlines() == [
        "1 match in 2 servers, best first. Call mcp_list_tools(server, tool_name) for a tool's schema.",
        "- notes/write_note: Append a note.",
    ]
    # One server's tools only, when the search names it.
    assert {m.server for m in found(bridge.list_tools("web", query="note")).matches} <= {"web"}
    assert starts(bridge_dirs) == 1


def test_after_a_restart_a_search_starts_no_server(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    first = make_bridge(notes_entry(bridge_dirs))
    ok(first.list_tools("notes"))  # a session lists: the index keeps it
    assert starts(bridge_dirs) == 1
    first.close()
    again = make_bridge(notes_entry(bridge_dirs))
    assert pairs(found(again.list_tools(query="delete every note")))[0] == "notes/delete_notes"
    assert starts(bridge_dirs) == 1


def test_two_bridges_share_the_index(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    one, two = make_bridge(notes_entry(bridge_dirs)), make_bridge(notes_entry(bridge_dirs))
    ok(one.list_tools("notes"))
    assert pairs(found(two.list_tools(query="read the notes")))[0] == "notes/read_notes"
    assert starts(bridge_dirs) == 1


def test_a_changed_tool_list_is_searched_anew(make_bridge: MakeBridge, stdio_args: StdioArgs) -> None:
    bridge = make_bridge()
    ok(bridge.add_server("growing", command=sys.executable, args_json=stdio_args("growing")))
    assert "growing/extra" not in pairs(found(bridge.list_tools(query="a tool that did not exist")))
    ok(bridge.call_tool("growing", "grow"))  # the server sends notifications/tools/list_changed
    assert pairs(found(bridge.list_tools(query="a tool that did not exist")))[0] == "growing/extra"


def test_a_removed_or_changed_entry_drops_its_part(make_bridge: MakeBridge, stdio_args: StdioArgs, http_echo_url: str) -> None:
    bridge = make_bridge()
    ok(bridge.add_server("gone", command=sys.executable, args_json=stdio_args("growing")))
    assert "gone/grow" in pairs(found(bridge.list_tools(query="grow")))
    ok(bridge.remove_server("gone"))
    result = found(bridge.list_tools(query="grow"))
    assert result.matches == [] and "gone" not in result.servers_searched
    assert "gone" not in bridge.catalog.parts()
    # The same name for another server: the old tools are never answered for it.
    ok(bridge.add_server("gone", command=sys.executable, args_json=stdio_args("growing")))
    ok(bridge.list_tools(query="grow"))
    ok(bridge.add_server("gone", url=http_echo_url))
    assert "gone/grow" not in pairs(found(bridge.list_tools(query="grow")))


def test_servers_that_cannot_be_searched_are_named_with_why(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    with start_http_fixture("oauth_protected.py") as (base, _):
        bridge = make_bridge(
            {
                **notes_entry(bridge_dirs),
                "broken": {"transport": "stdio", "command": sys.executable, "args": [fixture_path("crash_at_start")]},
                "remote": {"transport": "http", "url": base + "/mcp"},
            }
        )
        result = found(bridge.list_tools(query="read the notes"))
    reasons = {item.server: item.reason for item in result.servers_not_indexed}
    assert reasons["broken"].startswith("failed to start:") and "exit" in reasons["broken"]
    assert reasons["remote"].startswith("signing in needed")
    assert result.servers_searched == ["notes"] and pairs(result)[0] == "notes/read_notes"
    text = bridge.list_tools(query="read the notes").text
    assert text.startswith("Not searched: broken (failed to start:")


def test_a_search_answers_within_its_budget_and_names_a_server_still_starting(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, marker: str
) -> None:
    hang = {"transport": "stdio", "command": sys.executable, "args": [fixture_path("hang"), "--exit-on-eof", marker]}
    bridge = make_bridge({**notes_entry(bridge_dirs), "slow": hang}, search_wait_s=0.5, start_timeout=60)
    ok(bridge.list_tools("notes"))  # indexed: only the server that never answers is waited for
    result = found(bridge.list_tools(query="read the notes"))
    assert [(item.server, item.reason) for item in result.servers_not_indexed] == [("slow", STILL_STARTING)]
    assert pairs(result)[0] == "notes/read_notes"


def test_a_tool_the_policy_refuses_is_marked(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(notes_entry(bridge_dirs, deny=["delete_*"]))
    reply = bridge.list_tools(query="delete every note")
    match = found(reply).matches[0]
    assert (match.tool, match.refused) == ("delete_notes", "denied by the tool policy (deny 'delete_*')")
    assert "- notes/delete_notes [not callable]:" in reply.text


def test_a_query_that_matches_nothing_is_an_empty_list_and_a_line(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(notes_entry(bridge_dirs))
    reply = bridge.list_tools(query="kubernetes helm chart")
    assert found(reply).matches == []
    assert reply.text == "No tools match 'kubernetes helm chart' in 1 server."


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 501}, "query"),
        ({"query": 5}, "query"),
        ({"query": "notes", "limit": 0}, "limit"),
        ({"query": "notes", "limit": 51}, "limit"),
        ({"query": "notes", "limit": True}, "limit"),
        ({"query": "notes", "limit": "3"}, "limit"),
        ({"query": "notes", "tool_name": "read_notes", "server": "notes"}, "tool_name"),
    ],
)
def test_bad_query_and_limit_values_are_invalid_arguments(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, arguments: dict[str, Any], says: str
) -> None:
    bridge = make_bridge(notes_entry(bridge_dirs))
    assert says in error(bridge.list_tools(**arguments), "invalid_argument").message
    assert starts(bridge_dirs) == 0


def test_the_structured_result_has_the_documented_shape(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(notes_entry(bridge_dirs))
    data = json.loads(found(bridge.list_tools(query="notes", limit=2)).model_dump_json())
    assert set(data) == {"ok", "query", "matches", "servers_searched", "servers_not_indexed"}
    assert len(data["matches"]) == 2 and set(data["matches"][0]) == {"server", "tool", "description", "refused"}



def test_a_lists_ttl_is_kept_where_the_server_gives_one(make_bridge: MakeBridge, stdio_args: StdioArgs, http_echo_url: str) -> None:
    bridge = make_bridge()
    ok(bridge.add_server("modern", url=http_echo_url))  # 2026-07-28: its list says ttlMs (FastMCP: 0)
    ok(bridge.add_server("old", command=sys.executable, args_json=stdio_args("handshake_era")))  # no ttlMs
    ok(bridge.list_tools(query="echo"))
    parts = bridge.catalog.parts()
    modern = parts["modern"]
    assert modern.expires_at is not None and modern.expires_at - modern.listed_at == pytest.approx(REVALIDATE_AFTER_S)
    assert parts["old"].expires_at is None
