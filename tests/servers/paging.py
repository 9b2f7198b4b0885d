"""Paging fixture (stdlib only): a handshake-era server whose `tools/list` comes in pages.

Run: ``python paging.py PAGES TOOLS_PER_PAGE [DESCRIPTION_CHARS]``. PAGES ``0`` never ends: every
page carries a ``nextCursor`` (the hostile server that once took the bridge to 1.4 GB). Tools are
named ``t<page>_<n>``; their descriptions are DESCRIPTION_CHARS long (default 100). Extra
arguments are ignored (a marker). Exits on stdin EOF.
"""

import json
import sys

from handshake_era import ECHO_TOOL, RpcError, handle, send


def page(number: int, pages: int, per_page: int, chars: int) -> dict:
    tools = [
        {"name": f"t{number}_{n}", "description": "d" * chars, "inputSchema": {"type": "object"}}
        for n in range(per_page)
    ]
    if number == 0:
        tools[0] = ECHO_TOOL
    last = pages and number + 1 >= pages
    return {"tools": tools} if last else {"tools": tools, "nextCursor": str(number + 1)}


def main(pages: int, per_page: int, chars: int) -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue
        params = message.get("params") or {}
        try:
            if message["method"] == "tools/list":
                cursor = params.get("cursor")
                result = page(int(cursor) if cursor else 0, pages, per_page, chars)
            else:
                result = handle(message["method"], params)
        except RpcError as e:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": e.code, "message": e.message}})
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3].isdigit() else 100)
