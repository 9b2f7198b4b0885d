"""Hostile tool arguments through the real host face: `bridge.host.app.build_app` driven by FastMCP's in-memory client.

A host may send any JSON for a tool's arguments: numbers or objects where a string is declared,
missing or unknown fields. Whatever it sends, it must get a tool result (`isError`), with a message
it can read and no Python traceback; the registry stays as it was. Examples are derandomized.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastmcp import Client
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mcp_types import CallToolResult

from bridge.host.app import build_app
from bridge.settings import Settings
from bridge.tools import Bridge

PARAMS = {
    "mcp_list_tools": ("server", "tool_name"),
    "mcp_call_tool": ("server", "tool_name", "arguments_json"),
    "mcp_add_server": ("name", "url", "headers_json", "command", "args_json", "cwd"),
    "mcp_remove_server": ("name",),
}
CANARY = "Bearer SECRET-CANARY-7f3a"


@dataclass
class Host:
    """One in-memory client session to the app, kept open on a portal's event loop, and the registry file."""

    client: Client[Any]
    portal: BlockingPortal
    registry: Path

    def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        return self.portal.call(self.client.call_tool_mcp, tool, arguments)


@pytest.fixture(scope="module")
def host() -> Iterator[Host]:
    base = Path(tempfile.mkdtemp(prefix="bridge-fuzz-host-", dir="/var/tmp")).resolve()
    (base / "ws").mkdir()
    bridge = Bridge(Settings(workspace=base / "ws", state_dir=base / "state", timeout=30), {})
    try:
        with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(build_app(bridge))) as client:
            yield Host(client=client, portal=portal, registry=bridge.settings.registry_path)
    finally:
        bridge.close()
        shutil.rmtree(base, ignore_errors=True)


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


# JSON a host can send where the tools declare a string: anything but a string (or null).
NOT_A_STRING = st.one_of(
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.lists(st.integers() | st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=8), st.text(max_size=8) | st.integers(), max_size=3),
)


@st.composite
def wrong_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A call to one of the four tools with at least one argument of the wrong JSON type, or an unknown one."""
    tool = draw(st.sampled_from(sorted(PARAMS)))
    names = PARAMS[tool]
    arguments = {name: draw(st.one_of(st.none(), st.text(max_size=20), NOT_A_STRING)) for name in draw(st.sets(st.sampled_from(names)))}
    if draw(st.booleans()):
        arguments[draw(st.sampled_from(names))] = draw(NOT_A_STRING)
    else:
        arguments[draw(st.text(min_size=1, max_size=10).filter(lambda key: key not in names))] = draw(st.text(max_size=5))
    return tool, arguments


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(call=wrong_calls())
@example(call=("mcp_call_tool", {"server": "s", "tool_name": "t", "arguments_json": {"a": 1}}))
@example(call=("mcp_call_tool", {"server": "s", "tool_name": "t", "arguments_json": 3}))
@example(call=("mcp_call_tool", {"server": 5, "tool_name": "t"}))
@example(call=("mcp_add_server", {"name": "x", "url": "https://example.com/mcp", "headers_json": {"Authorization": CANARY}}))
@example(call=("mcp_remove_server", {"name": None}))
def test_wrong_json_types_get_a_readable_tool_error_without_a_traceback(host: Host, call: tuple[str, dict[str, Any]]) -> None:
    tool, arguments = call
    before = host.registry.read_bytes()
    result = host.call(tool, arguments)
    text = text_of(result)
    assert result.is_error, text
    assert text.strip()
    assert "Traceback" not in text and 'File "' not in text, text
    assert host.registry.read_bytes() == before


def test_a_wrong_json_type_is_invalid_argument_and_never_echoes_the_value(host: Host) -> None:
    result = host.call("mcp_add_server", {"name": "x", "url": "https://example.com/mcp", "headers_json": {"Authorization": CANARY}})
    assert result.is_error
    assert CANARY not in text_of(result)
    assert result.structured_content is not None
    assert result.structured_content["code"] == "invalid_argument"
    assert "headers_json" in result.structured_content["message"]
