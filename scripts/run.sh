#!/usr/bin/env bash
# Install the bridge into .venv (and bubblewrap, its Linux sandbox) on a fresh Debian machine, then
# serve it: stdio by default, `--transport http` for Streamable HTTP at http://127.0.0.1:8765/mcp.
# stdout is the MCP protocol in stdio mode, so everything else here goes to stderr.
# The workspace (what stdio children may write) defaults to ~/mcp-workspace, never this checkout:
# a child could rewrite the bridge's own code there.
set -euo pipefail
cd "$(dirname "$0")/.."
export MCP_WORKSPACE="${MCP_WORKSPACE:-$HOME/mcp-workspace}"
mkdir -p "$MCP_WORKSPACE"
source scripts/setup.sh
ensure_debian_packages python3:python3 bwrap:bubblewrap
ensure_venv
exec .venv/bin/mcp-bridge "$@"
