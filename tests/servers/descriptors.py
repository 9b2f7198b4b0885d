"""Reports the file descriptors this process was started with: looked at before anything is
imported or opened (`os.fstat` opens nothing), so each one is inherited from whoever spawned it."""

import os

INHERITED = []
for fd in range(1024):
    try:
        os.fstat(fd)
    except OSError:
        continue
    INHERITED.append(fd)

from fastmcp import FastMCP  # after the look, which must see only what was inherited

mcp = FastMCP("descriptors-fixture")


@mcp.tool(description="The file descriptors open when this process started.")
def inherited() -> list[int]:
    return INHERITED


if __name__ == "__main__":
    mcp.run(show_banner=False)
