"""Render catalogs and results as text for the model, inside the `MCP_MAX_CHARS` budget.

Budget rules: in a catalog every tool name survives; descriptions are shortened first (the longest
ones first, to a common cap) and a line says so. Call results are paged: each page ends in a
marker that says which characters it shows and how to read on (the bridge keeps the whole text
under a result handle). Images and audio pass through as blocks inside their own byte budget;
what does not pass is summarised in the text, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from bridge.errors import ErrorResult
from bridge.models import (
    CallResult,
    Drift,
    Match,
    NotIndexed,
    SearchResult,
    ServerList,
    ToolCatalog,
    ToolSchema,
    ToolSummary,
)
from bridge.tools import drift
from bridge.wording import count, escaped, escaped_lines, one_line, quoted, shown_name

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
    first; descriptions give way first. The lines are the bridge's: a name or a description is
    escaped onto its own line, so a downstream cannot forge another."""
    header = f"{shown_name(server)}: {count(len(tools), 'tool')}. Call mcp_list_tools(server, tool_name) for one tool's full schema."
    if changed is not None:
        header = f"{drift.describe(server, changed)}\n{header}"
    note = f"(descriptions shortened to fit the {max_chars}-character budget)"
    refusals = refusals or {}
    names = [tool.name for tool in tools]
    heads = [f"{shown_name(name)} {_NOT_CALLABLE}" if refusals.get(name) else shown_name(name) for name in names]
    descriptions = [one_line(tool.description) for tool in tools]
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


def found(
    query: str, matches: list[Match], searched: list[str], not_indexed: list[NotIndexed], max_chars: int
) -> tuple[SearchResult, str]:
    """One line a match, best first; what could not be searched, and why, comes first, so no cut
    drops it; descriptions give way first. Foreign names and text are escaped onto their line."""
    lines = [f"Not searched: {shown_name(item.server)} ({one_line(item.reason)})." for item in not_indexed]
    if not matches:
        lines.append(f"No tools match {quoted(query, 200)} in {count(len(searched), 'server')}.")
        data = SearchResult(query=query, matches=[], servers_searched=searched, servers_not_indexed=not_indexed)
        return data, "\n".join(lines)
    lines.append(
        f"{len(matches)} {'match' if len(matches) == 1 else 'matches'} in {count(len(searched), 'server')}, best first. "
        "Call mcp_list_tools(server, tool_name) for a tool's schema."
    )
    heads = [f"{shown_name(m.server)}/{shown_name(m.tool)}" + (f" {_NOT_CALLABLE}" if m.refused else "") for m in matches]
    descriptions = [one_line(m.description) for m in matches]
    fixed = sum(len(line) + 1 for line in lines) + sum(len(head) + 5 for head in heads)
    if any(m.refused for m in matches):
        fixed += len(_POLICY_NOTE) + 1
    cap = _description_cap([len(d) for d in descriptions], max(0, max_chars - fixed))
    if cap is not None:
        descriptions = [d if len(d) <= cap else d[: max(0, cap - 1)] + _SHORTENED if cap else "" for d in descriptions]
    lines += [f"- {head}: {d}" if d else f"- {head}" for head, d in zip(heads, descriptions)]
    if any(m.refused for m in matches):
        lines.append(_POLICY_NOTE)
    shown = [m.model_copy(update={"description": d}) for m, d in zip(matches, descriptions)]
    data = SearchResult(query=query, matches=shown, servers_searched=searched, servers_not_indexed=not_indexed)
    text, _ = cut("\n".join(lines), max_chars)
    return data, text


def schema(server: str, tool: types.Tool, max_chars: int, refused: str | None = None) -> tuple[ToolSchema, str]:
    """The definition exactly as the downstream sent it; only the text copy is cut."""
    definition = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = escaped_lines(json.dumps(definition, indent=2, ensure_ascii=False))  # JSON leaves C1, U+202E
    if refused:
        text = f"Not callable here: {refused}.\n{text}"
    text, _ = cut(text, max_chars)
    return ToolSchema(server=server, tool=definition, refused=refused), text


Media = types.ImageContent | types.AudioContent
Passed = types.ImageContent | types.AudioContent | types.ResourceLink


@dataclass(frozen=True)
class Rendering:
    """A downstream result as the host gets it: the whole text (cut later, page by page), the
    blocks that pass through as blocks, and the URIs the server linked (they may be read on)."""

    full: str
    blocks: list[Passed]
    summaries: list[str]
    linked: list[str]


def media_bytes(block: Media) -> int:
    """The decoded size of a base64 payload, without decoding it."""
    data = block.data
    return len(data) * 3 // 4 - data[-2:].count("=")


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB" if size >= 1024 * 1024 else f"{size} bytes"


def render(result: types.CallToolResult, max_media_bytes: int) -> Rendering:
    """Text blocks in order; images and audio pass through whole while they fit `max_media_bytes`
    together (each is named in the text either way); an embedded text resource shows its text;
    resource links stay links and are named in the text; anything else is summarised."""
    parts: list[str] = []
    blocks: list[Passed] = []
    summaries: list[str] = []
    linked: list[str] = []
    media_left = max_media_bytes

    def note(line: str) -> None:
        summaries.append(line)
        parts.append(line)

    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            size = media_bytes(block)
            if size <= media_left:
                media_left -= size
                blocks.append(block)
                note(f"[{block.type}: {one_line(block.mime_type, 100)}, {_mib(size)}, attached]")
            else:
                note(f"[{block.type}: {one_line(block.mime_type, 100)}, {_mib(size)}, over the {_mib(max_media_bytes)} media budget, not shown]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            kind = one_line(resource.mime_type or "unknown type", 100)
            uri = escaped(str(resource.uri))
            linked.append(str(resource.uri))
            if isinstance(resource, types.TextResourceContents):
                note(f"[embedded resource: {uri} ({kind}), {len(resource.text)} characters:]")
                parts.append(resource.text)
            else:
                note(f"[embedded resource: {uri} ({kind}), {len(resource.blob)} base64 characters, not shown]")
        elif isinstance(block, types.ResourceLink):
            blocks.append(block)
            linked.append(str(block.uri))
            note(
                f"[resource link: {escaped(str(block.uri))} ({one_line(block.mime_type or 'unknown type', 100)}) "
                f"{one_line(block.name, 200)}; read it with "
                f'tool_name="resources/read" and arguments_json={{"uri": {json.dumps(str(block.uri))}}}]'
            )
        else:
            note(f"[{one_line(str(getattr(block, 'type', type(block).__name__)), 100)} content, not shown]")
    text = "\n".join(part for part in parts if part)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return Rendering(full=text, blocks=blocks, summaries=summaries, linked=linked)


def page(text: str, offset: int, limit: int, read_on: Callable[[int], str] | None) -> tuple[str, int | None]:
    """The part of `text` from `offset` that fits `limit` characters with its marker, and where
    the next part starts (None: this part reaches the end). The marker says how to read on."""
    rest = len(text) - offset
    if offset == 0 and rest <= limit:
        return text, None
    end = len(text)

    def marker(to: int) -> str:
        if to >= len(text):
            return f"\n…[end: characters {offset}-{to} of {len(text)} characters]"
        how = f"; read on with {read_on(to)}" if read_on is not None else ""
        return f"\n…[truncated: showing characters {offset}-{to} of {len(text)} characters{how}]"

    if rest + len(marker(end)) > limit:
        # The marker's length depends on the numbers in it: take the room of the longest one. A
        # marker that leaves no room (names near their 256-character cap) still lets half through.
        end = min(len(text), offset + max(limit // 2, limit - len(marker(len(text) - 1))))
    return text[offset:end] + marker(end), end if end < len(text) else None


def call_result(
    server: str,
    tool: str,
    rendering: Rendering,
    structured: dict[str, Any] | None,
    max_chars: int,
    *,
    notes: Sequence[str] = (),
    handle: str | None = None,
    offset: int = 0,
) -> tuple[CallResult, str]:
    """One page of a result (the first, or the one at `offset` of a kept result under `handle`)."""
    full = "\n".join(part for part in (rendering.full, *notes) if part)

    def read_on(at: int) -> str:
        return f"mcp_call_tool(server={server!r}, tool_name={tool!r}, result_handle={handle!r}, offset={at})"

    shown, next_offset = page(full, offset, max_chars, read_on if handle is not None else None)
    summaries = list(rendering.summaries)
    if structured is not None and (offset or len(json.dumps(structured, ensure_ascii=False)) > max_chars):
        structured = None  # over budget (or a later page): the text copy stands in for it
        if not offset:
            summaries.append("[structured content over budget, shown only as cut text]")
    data = CallResult(
        server=server,
        tool=tool,
        text=shown,
        truncated=next_offset is not None or offset > 0,
        full_length=len(full),
        offset=offset,
        next_offset=next_offset,
        result_handle=handle if next_offset is not None else None,
        structured_content=structured,
        other_content=summaries if not offset else [],
    )
    return data, shown


def servers(data: ServerList) -> str:
    # The warning comes first, so the budget cut can never drop it.
    lines = [f"Warning: {data.warning}"] if data.warning else []
    if not data.servers:
        lines.append("No servers listed." if data.warning else "No servers registered. Add one with mcp_add_server.")
        return "\n".join(lines)
    lines.append(f"{count(len(data.servers), 'server')}. Call mcp_list_tools(server) to see a server's tools.")
    lines += [f"- {shown_name(s.name)} ({s.transport}, {s.origin}): {escaped(s.target)}" for s in data.servers]
    return "\n".join(lines)


def error(data: ErrorResult) -> str:
    retry = " (retryable)" if data.retryable else ""
    return f"Error [{data.code}]{retry}: {escaped(data.message)}"
