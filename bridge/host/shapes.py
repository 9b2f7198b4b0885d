"""Per-client shaping of `tools/list`: ChatGPT's complete shape, or strict JSON Schema 2020-12.

Hosts disagree on what a tool must look like:
- ChatGPT connectors are reported to drop a tool silently unless it carries the complete shape: a
  `title`, an `inputSchema` and an `outputSchema` that each declare `"$schema"` draft-07, all four
  annotations set explicitly, and `execution: {"taskSupport": "forbidden"}`.
- Claude Code rejects an `outputSchema` that declares draft-07 (it takes 2020-12 only). Every other
  client therefore gets schemas with no `$schema` at all, which MCP defines as 2020-12. Declaring
  2020-12 explicitly would not help: a TypeScript client compiling schemas with a default (draft-07)
  Ajv fails on a `$schema` it has not loaded.

The shape is chosen per request from what the client says about itself: its `clientInfo` (from
`initialize` in the handshake era, from the request's `_meta` in the 2026-07-28 era) or the HTTP
`User-Agent` (ChatGPT sends `openai-mcp/1.0.0`). `MCP_TOOL_SHAPE` overrides the choice. `execution`
reaches the wire only in the handshake era: the 2026-07-28 Tool type has no such field.

Both dialects read the same schema text: FastMCP inlines every `$ref` before this runs (its
dereferencing middleware sits inside this one), so there is no `$defs` versus `definitions` to
translate, and the keywords our pydantic models produce (`anyOf`, `const`, `enum`, `default`,
`additionalProperties`) mean the same in draft-07 and 2020-12.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import mcp_types as mt
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool
from mcp_types import ToolExecution

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
OPENAI_CLIENT_MARK = "openai-mcp"

Shape = Literal["chatgpt", "standard"]
ShapeSetting = Literal["auto", "chatgpt", "standard"]


def choose_shape(setting: ShapeSetting, client_labels: Sequence[str | None]) -> Shape:
    """The operator's setting wins; under `auto`, any label naming OpenAI's client means ChatGPT."""
    if setting != "auto":
        return setting
    if any(label and OPENAI_CLIENT_MARK in label.lower() for label in client_labels):
        return "chatgpt"
    return "standard"


def shape_tool(tool: Tool, shape: Shape) -> Tool:
    """A copy of `tool` in `shape`; the standard shape is the tool as registered."""
    if shape == "standard":
        return tool
    update: dict[str, Any] = {
        "parameters": _declare_draft07(tool.parameters),
        "execution": ToolExecution(task_support="forbidden"),
    }
    if tool.output_schema is not None:
        update["output_schema"] = _declare_draft07(tool.output_schema)
    return tool.model_copy(update=update)


def _declare_draft07(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": DRAFT_07, **{key: value for key, value in schema.items() if key != "$schema"}}


def _client_labels(context: MiddlewareContext[Any]) -> list[str | None]:
    """What the client calls itself: `clientInfo` name and title, and the HTTP `User-Agent`."""
    labels: list[str | None] = [get_http_headers(include={"user-agent"}).get("user-agent")]
    fastmcp_context = context.fastmcp_context
    if fastmcp_context is None or fastmcp_context.request_context is None:
        return labels
    params = fastmcp_context.session.client_params
    if params is not None:
        labels += [params.client_info.name, params.client_info.title]
    return labels


class ToolShapeMiddleware(Middleware):
    """Shapes every `tools/list` answer for the client that asked."""

    def __init__(self, setting: ShapeSetting) -> None:
        self.setting = setting

    async def on_list_tools(
        self, context: MiddlewareContext[mt.ListToolsRequest], call_next: CallNext[mt.ListToolsRequest, Sequence[Tool]]
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        shape = choose_shape(self.setting, _client_labels(context))
        return [shape_tool(tool, shape) for tool in tools]
