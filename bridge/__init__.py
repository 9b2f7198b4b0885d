"""mcp-bridge: four fixed MCP tools that reach other MCP servers (see README)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mcp-bridge")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"

