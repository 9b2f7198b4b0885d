"""What a downstream can make the bridge hold: one listing is at most MCP_MAX_LIST_PAGES pages and
MCP_MAX_TOOLS tools, a clear `protocol_error` past them, and a real bridge process stays small
against a `tools/list` that never ends (the fixture `paging.py` with PAGES 0)."""

from __future__ import annotations

import json
import sys

import pytest
from bridge_support import MakeBridge, error, ok
from helpers import fixture_path
from hostile_support import peak_rss_mib, real_bridge

from bridge.errors import ErrorResult
from bridge.models import ToolCatalog

BRIDGE_PEAK_BOUND_MIB = 400


def paging(pages: int, per_page: int, chars: int = 100) -> str:
    return json.dumps([fixture_path("paging"), str(pages), str(per_page), str(chars)])


def test_a_listing_of_several_pages_is_gathered_whole(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(max_list_pages=5, max_tools=20)
    ok(bridge.add_server("paged", command=sys.executable, args_json=paging(5, 4)))
    catalog = ok(bridge.list_tools("paged")).data
    assert isinstance(catalog, ToolCatalog) and len(catalog.tools) == 20


def test_a_listing_past_mcp_max_list_pages_is_a_protocol_error(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(max_list_pages=5)
    ok(bridge.add_server("endless", command=sys.executable, args_json=paging(0, 4)))
    data = error(bridge.list_tools("endless"), "protocol_error")
    assert "did not end after 5 pages (MCP_MAX_LIST_PAGES)" in data.message and data.retryable is False


def test_a_listing_past_mcp_max_tools_is_a_protocol_error(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(max_list_pages=5, max_tools=19)
    ok(bridge.add_server("paged", command=sys.executable, args_json=paging(5, 4)))
    data = error(bridge.list_tools("paged"), "protocol_error")
    assert "over 19 tools" in data.message and "MCP_MAX_TOOLS=19" in data.message


def test_a_call_names_the_bound_too_since_it_needs_the_listing(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(max_list_pages=3)
    ok(bridge.add_server("endless", command=sys.executable, args_json=paging(0, 4)))
    assert "MCP_MAX_LIST_PAGES" in error(bridge.call_tool("endless", "echo", '{"text": "hi"}'), "protocol_error").message


@pytest.mark.parametrize(
    ("per_page", "chars", "bound"), [(1000, 1000, "MCP_MAX_TOOLS"), (10, 100, "MCP_MAX_LIST_PAGES")],
    ids=["big-pages", "small-pages"],
)
def test_a_real_bridge_stays_under_400_mib_against_a_never_ending_tools_list(per_page: int, chars: int, bound: str) -> None:
    """Default bounds; big pages (~1.2 MB each) meet the tool bound, small ones the page bound."""
    with real_bridge() as bridge:
        bridge.add("endless", command=sys.executable, args_json=paging(0, per_page, chars))
        listed, _ = bridge.tool("mcp_list_tools", server="endless")
        again, _ = bridge.tool("mcp_list_tools", server="endless")  # a second listing holds no more
        peak = peak_rss_mib(bridge.pid)
    print(f"peak RSS {peak:.1f} MiB")
    for answer in (listed, again):
        assert ErrorResult.model_validate(answer).code == "protocol_error"
    assert bound in listed["message"]
    assert peak < BRIDGE_PEAK_BOUND_MIB, f"peak RSS {peak:.0f} MiB"
