"""`mcp_call_tool` answered on the wire without FastMCP's tool machinery (`bridge.host.calls`),
checked against a FastMCP tool with the signature it had: the same schema (listed lean), the same arguments taken."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastmcp import Client, FastMCP
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import Field

from bridge.host import schemas
from bridge.host.app import build_app
from bridge.host.calls import CallArguments
from bridge.settings import Settings
from bridge.tools import Bridge

CANARY = "SECRET-CANARY-1c9e"


def reference() -> FastMCP:
    """`mcp_call_tool` as a FastMCP function tool, with the signature the bridge would register."""
    app = FastMCP("reference")

    @app.tool(name="mcp_call_tool")
    def mcp_call_tool(
        server: str,
        tool_name: str,
        arguments_json: Annotated[str | dict[str, Any], Field(description="A JSON object, or its text.")] = "{}",
        result_handle: str | None = None,
        offset: int | None = None,
    ) -> str:
        return "taken"

    return app


@dataclass
class Face:
    client: Client[Any]
    reference: Client[Any]
    portal: BlockingPortal

    def on_the_wire(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """What a host gets: `tools/call` through the SDK's handler, the direct path."""
        result = self.portal.call(self.client.call_tool_mcp, "mcp_call_tool", arguments)
        assert result.structured_content is not None
        return result.structured_content

    def fastmcp_takes(self, arguments: dict[str, Any]) -> bool:
        return not self.portal.call(self.reference.call_tool_mcp, "mcp_call_tool", arguments).is_error


@pytest.fixture(scope="module")
def face() -> Iterator[Face]:
    base = Path(tempfile.mkdtemp(prefix="bridge-calls-", dir="/var/tmp")).resolve()
    (base / "ws").mkdir()
    bridge = Bridge(Settings(workspace=base / "ws", state_dir=base / "state", timeout=30), {})
    try:
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(Client(build_app(bridge))) as client,
            portal.wrap_async_context_manager(Client(reference())) as ref,
        ):
            yield Face(client=client, reference=ref, portal=portal)
    finally:
        bridge.close()
        shutil.rmtree(base, ignore_errors=True)


def _shape(schema: dict[str, Any]) -> object:
    """A JSON schema without the words for people: titles, descriptions."""
    if isinstance(schema, dict):
        return {k: _shape(v) for k, v in schema.items() if k not in ("title", "description")}
    if isinstance(schema, list):
        return [_shape(v) for v in schema]
    return schema


def test_the_listing_advertises_the_schema_fastmcp_made_from_the_signature(face: Face) -> None:
    [listed] = [tool for tool in face.portal.call(face.client.list_tools) if tool.name == "mcp_call_tool"]
    [made] = face.portal.call(face.reference.list_tools)
    assert listed.input_schema == schemas.lean_input(made.input_schema)  # listed lean, as the other three
    model = schemas.lean_input(CallArguments.model_json_schema())
    assert _shape(listed.input_schema["properties"]) == _shape(model["properties"])


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4,
)
FIELDS = ("server", "tool_name", "arguments_json", "result_handle", "offset", "extra")


@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(arguments=st.dictionaries(st.sampled_from(FIELDS), JSON | st.sampled_from(["echo", "{}", "3", "x"]), max_size=5))
@example(arguments={"server": "s", "tool_name": "t", "offset": "10"})
@example(arguments={"server": "s", "tool_name": "t", "arguments_json": {"a": 1}})
@example(arguments={"server": {"Authorization": CANARY}, "tool_name": "t"})
@example(arguments={"server": "s"})
def test_any_arguments_are_taken_exactly_when_fastmcp_took_them(face: Face, arguments: dict[str, Any]) -> None:
    answer = face.on_the_wire(arguments)
    refused = answer.get("code") == "invalid_argument" and answer["message"].startswith("Invalid arguments for")
    assert refused == (not face.fastmcp_takes(arguments)), answer
    if refused:
        assert CANARY not in answer["message"]


def test_a_wrong_type_names_the_field_and_never_echoes_the_value(face: Face) -> None:
    answer = face.on_the_wire({"server": {"Authorization": CANARY}, "tool_name": "t"})
    assert answer["code"] == "invalid_argument"
    assert "server" in answer["message"] and CANARY not in answer["message"]


def test_other_tools_still_run_through_fastmcp(face: Face) -> None:
    answer = face.portal.call(face.client.call_tool_mcp, "mcp_list_tools", {"server": 5})
    assert answer.structured_content is not None and answer.structured_content["code"] == "invalid_argument"
    unknown = face.portal.call(face.client.call_tool_mcp, "no_such_tool", {})
    assert unknown.is_error and "Unknown tool" in unknown.content[0].text  # type: ignore[union-attr]
