#!/usr/bin/env bash
# Install the bridge into .venv (and bubblewrap, its Linux sandbox) on a fresh Debian machine, then
# serve it: stdio by default, `--transport http` for Streamable HTTP at http://127.0.0.1:8765/mcp.
# stdout is the MCP protocol in stdio mode, so everything else here goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
ensure_debian_packages python3:python3 bwrap:bubblewrap
ensure_venv
exec .venv/bin/mcp-bridge "$@"
