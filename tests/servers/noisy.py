"""Noisy fixture: a FastMCP stdio server that misbehaves on its output streams.

At start it prints one non-JSON line to **stdout** ("this is not json-rpc") and several lines
to stderr (plus the FastMCP banner), then serves normally. Tool ``shout(text)`` writes a line to
stderr and returns the text upper-cased. The bridge's own stdout must stay clean JSON-RPC.

Env FIXTURE_STDERR_LINES (default 5) sets how many start-up stderr lines to write (use a large
number to check that the child's stderr is drained and a full pipe cannot block it).
``--http`` serves Streamable HTTP instead (prints ``PORT <n>`` on stdout first).
"""

import os
import socket
import sys

from fastmcp import FastMCP

mcp = FastMCP("noisy-fixture")


@mcp.tool(description="Write the text to stderr, then return it upper-cased.")
def shout(text: str) -> str:
    print(f"noisy: shouting {text!r}", file=sys.stderr, flush=True)
    return text.upper()


def serve_http(server: FastMCP) -> None:
    """Serve Streamable HTTP on a free 127.0.0.1 port; announce it as 'PORT <n>' on stdout."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio then sets TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections made before uvicorn starts wait in the backlog
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    app = server.http_app(path="/mcp")
    uvicorn.Server(uvicorn.Config(app, log_level="info")).run(sockets=[sock])


if __name__ == "__main__":
    for i in range(int(os.environ.get("FIXTURE_STDERR_LINES", "5"))):
        print(f"noisy: stderr line {i}", file=sys.stderr)
    sys.stderr.flush()
    if "--http" in sys.argv[1:]:
        serve_http(mcp)
    else:
        print("this is not json-rpc", flush=True)
        mcp.run()  # banner left on: more stderr noise
