"""The start-up baseline: a bare FastMCP server with one tool, served over stdio."""

import logging

from fastmcp import FastMCP

logging.getLogger("fastmcp").setLevel(logging.WARNING)  # no banner line on stderr

mcp = FastMCP("bare")


@mcp.tool
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    mcp.run(show_banner=False)
