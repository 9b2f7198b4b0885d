"""mcp-bridge: four fixed MCP tools that reach other MCP servers (see README)."""

import os
from importlib.metadata import PackageNotFoundError, version

# FastMCP's settings read `./.env` when fastmcp is first imported (`FASTMCP_ENV_FILE`, default
# ".env"): a child that writes `<workspace>/.env` would reconfigure the next bridge started there
# (its host, its stateless mode, its SSRF proxy trust...). Every entry point imports this package
# before fastmcp, so FastMCP reads no file at all: its settings come from FASTMCP_* variables only.
os.environ["FASTMCP_ENV_FILE"] = os.devnull

try:
    __version__ = version("mcp-bridge")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"
