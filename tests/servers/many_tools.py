"""Many-tools fixture: a FastMCP server with N tools, for catalog/budget tests.

N comes from env var FIXTURE_TOOL_COUNT (default 300). Tools are named tool_0000, tool_0001, ...;
each takes ``x: int``, returns ``"tool_NNNN: <x>"`` and has a ~200-character description.

Run: ``python many_tools.py`` (stdio) or ``python many_tools.py --http`` (Streamable HTTP at
``http://127.0.0.1:<port>/mcp``; prints ``PORT <n>`` on stdout first).
"""

import logging
import os
import socket
import sys

from fastmcp import FastMCP

logging.getLogger("fastmcp").setLevel(logging.WARNING)  # keep stderr quiet (no INFO lines)

TOOL_COUNT = int(os.environ.get("FIXTURE_TOOL_COUNT", "300"))

mcp = FastMCP("many-tools-fixture")


def make_tool(name: str):
    def tool(x: int) -> str:
        return f"{name}: {x}"

    return tool


for i in range(TOOL_COUNT):
    name = f"tool_{i:04d}"
    description = (
        f"{name} is one of {TOOL_COUNT} generated fixture tools. It takes one integer x and returns "
        f"its own name followed by x. This sentence only pads the description so it is about two hundred characters long."
    )
    mcp.tool(make_tool(name), name=name, description=description)


def serve_http(server: FastMCP) -> None:
    """Serve Streamable HTTP on a free 127.0.0.1 port; announce it as 'PORT <n>' on stdout."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio then sets TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections made before uvicorn starts wait in the backlog
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.http_app(path="/mcp")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    if "--http" in sys.argv[1:]:
        serve_http(mcp)
    else:
        mcp.run(show_banner=False)
