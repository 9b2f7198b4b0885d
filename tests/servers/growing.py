"""Growing fixture: a FastMCP stdio server whose tool list changes while a session is open.

Tools: `grow()` registers a new tool `extra` and notifies the client (`notifications/tools/list_changed`);
`extra()` exists only after `grow()`. Used to check that the bridge refreshes its cached catalog.
"""

import logging

import mcp_types
from fastmcp import Context, FastMCP

logging.getLogger("fastmcp").setLevel(logging.WARNING)

mcp = FastMCP("growing-fixture")


def extra() -> str:
    """A tool that did not exist when the session started."""
    return "extra is here"


@mcp.tool(description="Add the tool 'extra' and tell the client its tool list changed.")
async def grow(ctx: Context) -> str:
    mcp.add_tool(extra)
    await ctx.send_notification(mcp_types.ToolListChangedNotification())
    return "grown"


if __name__ == "__main__":
    mcp.run(show_banner=False)
