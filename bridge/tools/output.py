"""Render catalogs and results as text for the model, inside the `MCP_MAX_CHARS` budget.

Budget rules: in a catalog every tool name survives; descriptions are shortened first (the longest
ones first, to a common cap) and a line says so. Call results are cut with a visible marker that
gives the full length, and non-text blocks are summarised, never dropped silently.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from bridge.errors import ErrorResult
from bridge.models import (
    CallResult,
    Drift,
    ServerList,
    ToolCatalog,
    ToolSchema,
    ToolSummary,
)
from bridge.tools import drift
from bridge.wording import count

_SHORTENED = "…"
_NOT_CALLABLE = "[not callable]"
_POLICY_NOTE = "([not callable]: refused by the tool policy; the tool's schema says why)"


def cut(text: str, limit: int) -> tuple[str, bool]:
    """Cut `text` to at most `limit` characters, marker included, saying how long it was."""
    if len(text) <= limit:
        return text, False
    marker = f"\n…[truncated: showing {{shown}} of {len(text)} characters]"
    shown = max(0, limit - len(marker.format(shown=limit)))
    return text[:shown] + marker.format(shown=shown), True


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def _description_cap(lengths: list[int], room: int) -> int | None:
    """The largest cap c with sum(min(len, c)) <= room; None when everything fits uncut."""
    if sum(lengths) <= room:
        return None
    low, high = 0, max(lengths)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(length, mid) for length in lengths) <= room:
            low = mid
        else:
            high = mid - 1
    return low


def catalog(
    server: str,
    tools: list[types.Tool],
    max_chars: int,
    refusals: dict[str, str | None] | None = None,
    changed: Drift | None = None,
) -> tuple[ToolCatalog, str]:
    """Every name survives, with its mark when the tool policy refuses it, and a drift warning comes
    first; descriptions give way first."""
    header = f"{server}: {count(len(tools), 'tool')}. Call mcp_list_tools(server, tool_name) for one tool's full schema."
    if changed is not None:
        header = f"{drift.describe(server, changed)}\n{header}"
    note = f"(descriptions shortened to fit the {max_chars}-character budget)"
    refusals = refusals or {}
    names = [tool.name for tool in tools]
    heads = [f"{name} {_NOT_CALLABLE}" if refusals.get(name) else name for name in names]
    descriptions = [_one_line(tool.description) for tool in tools]
    # Each line is "- head: description"; the fixed part of every line costs len(head) + 4.
    fixed = len(header) + 1 + len(note) + 1 + sum(len(head) + 5 for head in heads)
    if any(refusals.values()):
        fixed += len(_POLICY_NOTE) + 1
    cap = _description_cap([len(d) for d in descriptions], max(0, max_chars - fixed))
    if cap is not None:
        descriptions = [d if len(d) <= cap else d[: max(0, cap - 1)] + _SHORTENED if cap else "" for d in descriptions]
    lines = [header, *(f"- {head}: {d}" if d else f"- {head}" for head, d in zip(heads, descriptions))]
    if any(refusals.values()):
        lines.append(_POLICY_NOTE)
    if cap is not None:
        lines.append(note)
    summaries = [
        ToolSummary(name=name, description=d, refused=refusals.get(name)) for name, d in zip(names, descriptions)
    ]
    data = ToolCatalog(server=server, tools=summaries, truncated=cap is not None, drift=changed)
    return data, "\n".join(lines)


def schema(server: str, tool: types.Tool, max_chars: int, refused: str | None = None) -> tuple[ToolSchema, str]:
    """The definition exactly as the downstream sent it; only the text copy is cut."""
    definition = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = json.dumps(definition, indent=2, ensure_ascii=False)
    if refused:
        text = f"Not callable here: {refused}.\n{text}"
    text, _ = cut(text, max_chars)
    return ToolSchema(server=server, tool=definition, refused=refused), text


def _summarise_block(block: Any) -> str | None:
    if isinstance(block, types.TextContent):
        return None
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        return f"[{block.type}: {block.mime_type}, {len(block.data)} base64 characters, not shown]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        size = len(getattr(resource, "text", None) or getattr(resource, "blob", None) or "")
        return f"[embedded resource: {resource.uri} ({resource.mime_type or 'unknown type'}), {size} characters]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link: {block.uri} ({block.mime_type or 'unknown type'}) {block.name}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"


def tool_result_text(result: types.CallToolResult) -> tuple[str, list[str]]:
    """Text blocks joined; every other block summarised in a line of its own."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    others = [s for s in (_summarise_block(block) for block in result.content) if s is not None]
    return "\n".join(texts), others


def call_result(server: str, tool: str, result: types.CallToolResult, max_chars: int) -> tuple[CallResult, str]:
    text, others = tool_result_text(result)
    structured = result.structured_content
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    full = "\n".join(part for part in (text, *others) if part)
    shown, truncated = cut(full, max_chars)
    if structured is not None and len(json.dumps(structured, ensure_ascii=False)) > max_chars:
        structured = None  # over budget: the text copy (cut, with its marker) stands in for it
        others = [*others, "[structured content over budget, shown only as cut text]"]
    data = CallResult(
        server=server,
        tool=tool,
        text=shown,
        truncated=truncated,
        full_length=len(full),
        structured_content=structured,
        other_content=others,
    )
    return data, shown


def servers(data: ServerList) -> str:
    # The warning comes first, so the budget cut can never drop it.
    lines = [f"Warning: {data.warning}"] if data.warning else []
    if not data.servers:
        lines.append("No servers listed." if data.warning else "No servers registered. Add one with mcp_add_server.")
        return "\n".join(lines)
    lines.append(f"{count(len(data.servers), 'server')}. Call mcp_list_tools(server) to see a server's tools.")
    lines += [f"- {s.name} ({s.transport}, {s.origin}): {s.target}" for s in data.servers]
    return "\n".join(lines)


def error(data: ErrorResult) -> str:
    retry = " (retryable)" if data.retryable else ""
    return f"Error [{data.code}]{retry}: {data.message}"
