"""Many MCP servers over Streamable HTTP in one process: `/s<i>/mcp` for i below N, each with its
share of the tool-search sets' tools (renamed, so every server's list is its own).

    many_servers.py N      announce 'PORT <n>' on stdout, then serve on 127.0.0.1
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from contextlib import AsyncExitStack, asynccontextmanager
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn
from fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.routing import Mount

logging.getLogger("fastmcp").setLevel(logging.WARNING)
DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
TOOLS_EACH = 36


def echo(text: str = "") -> str:
    return text


def pool() -> list[dict[str, str]]:
    return [
        tool
        for name in ("toolsearch-dev", "toolsearch-val")
        for tools in json.loads((DATA / name / "corpus.json").read_text())["servers"].values()
        for tool in tools
    ]


def main() -> None:
    count, tools = int(sys.argv[1]), pool()
    apps = []
    for i in range(count):
        server = FastMCP(f"s{i}")
        for j in range(TOOLS_EACH):
            tool = tools[(i * TOOLS_EACH + j) % len(tools)]
            server.tool(echo, name=f"{tool['name']}_{i}_{j}", description=tool["description"])
        apps.append(server.http_app(path="/mcp"))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for app in apps:
                await stack.enter_async_context(app.lifespan(app))
            yield

    root = Starlette(routes=[Mount(f"/s{i}", app=app) for i, app in enumerate(apps)], lifespan=lifespan)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(root, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
