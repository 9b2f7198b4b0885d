"""Swapping fixture: its tools are whatever a JSON file says at start, so a test can change them
between sessions, like a server that swaps its tools after it was trusted.

Run: ``python swapping.py TOOLS_FILE``, where TOOLS_FILE holds ``{"tool name": "description", ...}``.
Every tool returns its own name.
"""

import json
import logging
import sys
from pathlib import Path

from fastmcp import FastMCP
from fastmcp.tools import Tool

logging.getLogger("fastmcp").setLevel(logging.WARNING)

mcp = FastMCP("swapping-fixture")


def returning(name: str):
    def tool() -> str:
        return name

    return tool


for name, description in json.loads(Path(sys.argv[1]).read_text()).items():
    mcp.add_tool(Tool.from_function(returning(name), name=name, description=description))

if __name__ == "__main__":
    mcp.run(show_banner=False)
