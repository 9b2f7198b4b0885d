"""Rendering inside the character budget: catalogs keep every name, results are cut with a marker
that gives the full length, and non-text blocks are summarised rather than dropped.

Pure functions over `mcp_types` objects built here.
"""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from bridge.errors import ErrorResult
from bridge.models import ServerInfo, ServerList
from bridge.tools import output


def make_tools(count: int, description_length: int) -> list[types.Tool]:
    return [
        types.Tool(
            name=f"tool_{i:04d}",
            description=(f"tool_{i:04d} does its job. " + "padding " * description_length)[:description_length],
            input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
        )
        for i in range(count)
    ]


# -- cut -------------------------------------------------------------------------------------


def test_cut_leaves_text_within_the_limit_untouched() -> None:
    assert output.cut("x" * 4000, 4000) == ("x" * 4000, False)


@pytest.mark.parametrize("limit", [200, 1000, 4000])
@pytest.mark.parametrize("length", [4001, 12_345, 1_000_000])
def test_cut_text_fits_the_limit_and_its_marker_gives_the_full_length(limit: int, length: int) -> None:
    text = "y" * length
    shown, truncated = output.cut(text, limit)
    assert truncated is True
    assert len(shown) <= limit
    assert f"of {length} characters" in shown
    assert shown.startswith("y" * (limit // 2))


def test_cut_marker_says_how_much_is_shown() -> None:
    shown, _ = output.cut("z" * 10_000, 1000)
    kept = len(shown) - len(shown.lstrip("z"))
    assert f"showing {kept} of 10000" in shown


# -- catalog ---------------------------------------------------------------------------------


def test_catalog_under_budget_keeps_every_description_whole() -> None:
    tools = make_tools(5, 60)
    data, text = output.catalog("srv", tools, 4000)
    assert data.truncated is False
    assert [t.description for t in data.tools] == [t.description for t in tools]
    for tool in tools:
        assert f"- {tool.name}: {tool.description}" in text
    assert "shortened" not in text


def test_catalog_over_budget_keeps_every_tool_name() -> None:
    tools = make_tools(300, 200)
    data, text = output.catalog("srv", tools, 4000)
    assert data.truncated is True
    assert [t.name for t in data.tools] == [t.name for t in tools]
    lines = text.splitlines()
    for tool in tools:
        assert any(line == f"- {tool.name}" or line.startswith(f"- {tool.name}:") for line in lines)


def test_catalog_over_budget_says_descriptions_were_shortened() -> None:
    _, text = output.catalog("srv", make_tools(300, 200), 4000)
    assert "descriptions shortened to fit the 4000-character budget" in text


def test_catalog_tells_how_to_get_one_tools_full_schema() -> None:
    _, text = output.catalog("srv", make_tools(300, 200), 4000)
    assert "mcp_list_tools(server, tool_name)" in text.splitlines()[0]


def test_catalog_shortens_descriptions_to_fit_when_the_names_fit() -> None:
    tools = make_tools(20, 1000)
    data, text = output.catalog("srv", tools, 4000)
    assert data.truncated is True
    assert len(text) <= 4000
    assert all(f"- {tool.name}" in text for tool in tools)
    assert all(0 < len(t.description) < 1000 and t.description.endswith("…") for t in data.tools)


def test_catalog_shortens_only_the_long_descriptions() -> None:
    tools = make_tools(10, 30) + make_tools(10, 2000)
    tools = [tool.model_copy(update={"name": f"t{i}"}) for i, tool in enumerate(tools)]
    data, _ = output.catalog("srv", tools, 1500)
    short, long = data.tools[:10], data.tools[10:]
    assert [t.description for t in short] == [t.description for t in tools[:10]]
    assert all(t.description.endswith("…") for t in long)


def test_catalog_puts_each_description_on_one_line() -> None:
    tool = types.Tool(name="multi", description="first line\n\n  second\tline", input_schema={"type": "object"})
    _, text = output.catalog("srv", [tool], 4000)
    assert "- multi: first line second line" in text.splitlines()


# -- schema ----------------------------------------------------------------------------------


def test_schema_keeps_the_definition_whole_while_the_text_copy_is_cut() -> None:
    properties = {f"p{i}": {"type": "string", "description": "d" * 100} for i in range(100)}
    tool = types.Tool(name="wide", input_schema={"type": "object", "properties": properties})
    data, text = output.schema("srv", tool, 1000)
    assert data.tool["inputSchema"]["properties"] == properties
    assert len(text) <= 1000
    assert "truncated" in text


# -- call results ----------------------------------------------------------------------------

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
PNG_BYTES = 70
MIB = 1024 * 1024


def call(result: types.CallToolResult, limit: int = 4000, media: int = MIB, **kw: object) -> tuple[object, str]:
    rendering = output.render(result, media)
    return output.call_result("srv", "tool", rendering, result.structured_content, limit, **kw)  # type: ignore[arg-type]


def test_call_result_passes_short_text_through() -> None:
    data, text = call(types.CallToolResult(content=[types.TextContent(type="text", text="hello")]))
    assert (text, data.text, data.truncated, data.full_length, data.next_offset) == ("hello", "hello", False, 5, None)


def test_call_result_over_budget_is_cut_with_the_full_length() -> None:
    data, text = call(types.CallToolResult(content=[types.TextContent(type="text", text="x" * 100_000)]))
    assert len(text) <= 4000
    assert data.truncated is True
    assert data.full_length == 100_000
    assert "of 100000" in text


def test_a_cut_result_with_a_handle_says_how_to_read_on_and_where() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text="x" * 10_000)])
    data, text = call(result, handle="r-abc")
    assert len(text) <= 4000
    assert data.result_handle == "r-abc"
    assert f"result_handle='r-abc', offset={data.next_offset})" in text
    assert text.startswith("x" * data.next_offset + "\n…[truncated: showing characters 0-")


def test_pages_of_a_kept_result_join_to_the_whole_text_exactly() -> None:
    whole = "".join(f"{i:05d}|" for i in range(5000))
    rendering = output.Rendering(full=whole, blocks=[], summaries=[], linked=[])
    parts, offset = [], 0
    while True:
        data, text = output.call_result("srv", "tool", rendering, None, 1000, handle="r-x", offset=offset)
        assert len(text) <= 1000
        end = data.next_offset if data.next_offset is not None else len(whole)
        parts.append(text[: end - offset])
        if data.next_offset is None:
            assert text.endswith(f"[end: characters {offset}-{len(whole)} of {len(whole)} characters]")
            break
        offset = data.next_offset
    assert "".join(parts) == whole


def test_an_image_under_the_media_budget_passes_through_as_the_same_block() -> None:
    image = types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")
    rendering = output.render(types.CallToolResult(content=[image]), MIB)
    assert rendering.blocks == [image]
    assert rendering.summaries == [f"[image: image/png, {PNG_BYTES} bytes, attached]"]


def test_an_image_over_the_media_budget_is_summarised_with_its_size() -> None:
    image = types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")
    data, text = call(types.CallToolResult(content=[image]), media=PNG_BYTES - 1)
    assert data.other_content == [f"[image: image/png, {PNG_BYTES} bytes, over the {PNG_BYTES - 1} bytes media budget, not shown]"]
    assert PNG_B64 not in text


def test_media_blocks_share_one_byte_budget() -> None:
    image = types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")
    rendering = output.render(types.CallToolResult(content=[image, image]), PNG_BYTES * 2 - 1)
    assert rendering.blocks == [image]
    assert "over the" in rendering.summaries[1]


def test_an_audio_block_passes_through() -> None:
    audio = types.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav")
    rendering = output.render(types.CallToolResult(content=[audio]), MIB)
    assert rendering.blocks == [audio]
    assert rendering.summaries == ["[audio: audio/wav, 4 bytes, attached]"]


def test_an_embedded_text_resource_shows_its_text() -> None:
    resource = types.TextResourceContents(uri="file:///notes.txt", text="hello resource", mime_type="text/plain")
    data, text = call(types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=resource)]))
    assert data.other_content == ["[embedded resource: file:///notes.txt (text/plain), 14 characters:]"]
    assert text.endswith("\nhello resource")


def test_a_resource_link_stays_a_link_and_says_how_to_read_it() -> None:
    link = types.ResourceLink(type="resource_link", uri="https://example.com/doc", name="doc", mime_type="text/html")
    rendering = output.render(types.CallToolResult(content=[link]), MIB)
    assert rendering.blocks == [link]
    assert rendering.linked == ["https://example.com/doc"]
    assert 'tool_name="resources/read" and arguments_json={"uri": "https://example.com/doc"}' in rendering.full


def test_call_result_keeps_text_and_media_lines_in_order() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="first"),
            types.ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
            types.TextContent(type="text", text="second"),
        ]
    )
    data, text = call(result)
    assert text.splitlines() == ["first", data.other_content[0], "second"]


def test_call_result_keeps_structured_content_within_budget() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="42")], structured_content={"result": 42}
    )
    data, _ = call(result)
    assert data.structured_content == {"result": 42}


def test_call_result_renders_structured_content_as_text_when_there_is_no_text() -> None:
    _data, text = call(types.CallToolResult(content=[], structured_content={"result": 42}))
    assert json.loads(text) == {"result": 42}


def test_call_result_drops_structured_content_over_budget_and_says_so() -> None:
    big = {"result": "x" * 10_000}
    result = types.CallToolResult(content=[types.TextContent(type="text", text="x" * 10_000)], structured_content=big)
    data, text = call(result)
    assert data.structured_content is None
    assert "[structured content over budget, shown only as cut text]" in data.other_content
    assert len(text) <= 4000


# -- servers and errors ----------------------------------------------------------------------


def test_server_list_names_transport_origin_and_target() -> None:
    data = ServerList(
        servers=[ServerInfo(name="docs", transport="http", origin="config", target="https://example.com/mcp")]
    )
    assert "- docs (http, config): https://example.com/mcp" in output.servers(data)


def test_counts_are_worded_in_the_singular_for_one() -> None:
    one = ServerList(servers=[ServerInfo(name="docs", transport="http", origin="config", target="https://x.example/mcp")])
    assert "1 server." in output.servers(one) and "1 servers" not in output.servers(one)
    two = ServerList(servers=one.servers * 2)
    assert "2 servers." in output.servers(two)


def test_an_empty_server_list_says_how_to_add_one() -> None:
    assert "mcp_add_server" in output.servers(ServerList(servers=[]))


def test_error_text_names_the_code_and_whether_to_retry() -> None:
    retry = ErrorResult(code="timeout", retryable=True, message="slow")
    final = ErrorResult(code="http_error", retryable=False, message="401")
    assert output.error(retry) == "Error [timeout] (retryable): slow"
    assert output.error(final) == "Error [http_error]: 401"
