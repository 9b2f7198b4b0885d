"""Echo fixture: a small FastMCP server with one tool per behaviour the bridge must relay.

Tools: echo, add (structured output), big (long text), slow (async sleep), fail (isError
result), image (image content), env (the child's environment, to check scrubbing), cwd.

With ``--linger`` (stdio) it ignores SIGTERM and stays after stdin closes, so closing its session
takes the bridge's whole grace period (or a SIGKILL).

Run: ``python echo.py`` (stdio) or ``python echo.py --http`` (Streamable HTTP at
``http://127.0.0.1:<port>/mcp`` on a free port; prints ``PORT <n>`` on stdout first).
"""

import asyncio
import logging
import os
import signal
import socket
import sys

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.types import Image

# A valid 1x1 transparent PNG.
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)
BIG_TAIL = "<END-OF-BIG>"

logging.getLogger("fastmcp").setLevel(logging.WARNING)  # keep stderr quiet (no INFO lines)

mcp = FastMCP("echo-fixture")


@mcp.tool(description="Return the given text unchanged.")
def echo(text: str) -> str:
    return text


@mcp.tool(description="Add two integers and return the sum (structured output).")
def add(a: int, b: int) -> int:
    return a + b


@mcp.tool(description=f"Return exactly n characters: 'x' repeated, ending with {BIG_TAIL!r} when n allows.")
def big(n: int) -> str:
    if n <= len(BIG_TAIL):
        return "x" * n
    return "x" * (n - len(BIG_TAIL)) + BIG_TAIL


@mcp.tool(description="Sleep asynchronously for the given number of seconds, then return 'slept'.")
async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "slept"


@mcp.tool(description="Always fail with the given message (the result has isError set).")
def fail(message: str) -> str:
    raise ToolError(message)


@mcp.tool(description="Return a tiny 1x1 PNG image content block.")
def image() -> Image:
    return Image(data=PNG_1X1, format="png")


@mcp.tool(description="Return this server process's environment variables as a dict.")
def env() -> dict[str, str]:
    return dict(os.environ)


@mcp.tool(description="Return this server process's current working directory.")
def cwd() -> str:
    return os.getcwd()


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
        if "--linger" in sys.argv[1:]:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        mcp.run(show_banner=False)
        while "--linger" in sys.argv[1:]:
            signal.pause()
