"""Annotated fixture: tools with and without `readOnlyHint`, for the tool policy tests.

Run: ``python annotated.py STARTS_FILE``. Every start appends a line to STARTS_FILE; `write_note`
and `delete_notes` change files next to it, so a test can see whether a refused call ran.
"""

import logging
import sys
from pathlib import Path

from fastmcp import FastMCP
from mcp_types import ToolAnnotations

logging.getLogger("fastmcp").setLevel(logging.WARNING)

starts = Path(sys.argv[1])
notes = starts.with_name("notes.txt")
with starts.open("a") as log:
    log.write("start\n")

mcp = FastMCP("annotated-fixture")


@mcp.tool(description="Read the notes.", annotations=ToolAnnotations(readOnlyHint=True))
def read_notes() -> str:
    return notes.read_text() if notes.exists() else ""


@mcp.tool(description="Append a note.", annotations=ToolAnnotations(readOnlyHint=False))
def write_note(text: str) -> str:
    with notes.open("a") as file:
        file.write(text + "\n")
    return "written"


@mcp.tool(description="Delete all notes (no annotations at all).")
def delete_notes() -> str:
    notes.unlink(missing_ok=True)
    return "deleted"


if __name__ == "__main__":
    mcp.run(show_banner=False)
