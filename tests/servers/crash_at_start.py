"""Crash-at-start fixture (stdlib only): writes a few lines to stderr and exits with code 3
before speaking any MCP. Used to check that the bridge reports the exit code and stderr tail.
"""

import sys

print("crash_at_start: starting up", file=sys.stderr)
print("crash_at_start: loading configuration", file=sys.stderr)
print("fatal: fixture crashed on purpose", file=sys.stderr, flush=True)
sys.exit(3)
