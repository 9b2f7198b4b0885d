"""Headers-echo fixture: remembers the headers of every HTTP request it receives, so a test can prove
what a client sent it (and what it did not).

Tool: seen_headers() -> one {name: value} dict per HTTP request so far, names lower-cased; the
initialize, list and call requests are all in it, not only the call's.

Run: ``python headers_echo.py --http`` (Streamable HTTP at ``http://127.0.0.1:<port>/mcp`` on a free
port; prints ``PORT <n>`` on stdout first).
"""

import logging
import socket
import sys

import uvicorn
from fastmcp import FastMCP

logging.getLogger("fastmcp").setLevel(logging.WARNING)

SEEN: list[dict[str, str]] = []

mcp = FastMCP("headers-echo-fixture")


@mcp.tool(description="Return the headers of every HTTP request this server has received.")
def seen_headers() -> list[dict[str, str]]:
    return SEEN


class RecordHeaders:
    """ASGI middleware: note each request's headers before the MCP app sees it."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            SEEN.append({name.decode().lower(): value.decode() for name, value in scope["headers"]})
        await self.app(scope, receive, send)


if __name__ == "__main__":
    if "--http" not in sys.argv[1:]:
        sys.exit("headers_echo.py serves HTTP only: pass --http")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio then sets TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = RecordHeaders(mcp.http_app(path="/mcp"))
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])
