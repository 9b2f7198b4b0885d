"""Paged listings on an open session, bounded: a server's tools and the URIs of its resources.

Kept apart from the pool (`bridge.downstream.pool`), which keeps sessions and caches what they
list; here is what one listing may hold, so a server whose `nextCursor` never ends is a
`protocol_error`, not a bridge out of memory.
"""

from __future__ import annotations

import mcp_types as types
from mcp import Client

from bridge.errors import BridgeError

_MAX_PAGES = 100  # of a resource listing: a server that pages forever cannot hold a read
# Beside the page and tool counts: 100 pages of one 16 MiB tool each would still be 1.6 GB.
MAX_LISTING_BYTES = 32 * 1024 * 1024


class Listings:
    """Told of what servers list: the kept catalog index (`bridge.tools.finding`) listens here."""

    async def listed(self, name: str, tools: list[types.Tool], ttl_s: float | None) -> None:
        """A server's tools were fetched; `ttl_s`: how long its list holds, where it says so."""

    async def changed(self, name: str) -> None:
        """The server announced `notifications/tools/list_changed`."""


async def all_tools(client: Client, *, pages: int, most: int) -> tuple[list[types.Tool], float | None]:
    """Every tool the server lists, within `pages` pages (MCP_MAX_LIST_PAGES), `most` tools
    (MCP_MAX_TOOLS) and `MAX_LISTING_BYTES`; and how long the list holds, in seconds, where the
    server says so."""
    tools: list[types.Tool] = []
    held = 0
    cursor: str | None = None
    ttls: list[int] = []
    for _ in range(pages):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        if "ttl_ms" in page.model_fields_set:  # a 2026-07-28 server says how long the list holds
            ttls.append(page.ttl_ms)
        held += sum(len(tool.model_dump_json()) for tool in page.tools)
        if len(tools) > most:
            raise BridgeError(
                "protocol_error", f"The server listed over {most} tools; the bridge holds at most MCP_MAX_TOOLS={most}."
            )
        if held > MAX_LISTING_BYTES:
            raise BridgeError("protocol_error", f"The server's tool definitions exceed {MAX_LISTING_BYTES >> 20} MiB in all.")
        cursor = page.next_cursor
        if not cursor:
            break
    else:
        raise BridgeError(
            "protocol_error",
            f"The server's tool list did not end after {pages} pages (MCP_MAX_LIST_PAGES); it kept sending nextCursor.",
        )
    return tools, min(ttls) / 1000 if ttls else None


async def listed_resources(client: Client) -> set[str]:
    """The URIs of the resources the server lists (none if it offers no resources)."""
    if client.server_capabilities.resources is None:
        return set()
    uris: set[str] = set()
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_resources(cursor=cursor)
        uris.update(str(resource.uri) for resource in page.resources)
        cursor = page.next_cursor
        if not cursor:
            break
    return uris
