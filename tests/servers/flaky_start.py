"""Flaky-start fixture: counts its starts, and serves the echo tools only while a flag file exists.

Run: ``python flaky_start.py COUNT_FILE READY_FILE``. Every start appends a line to COUNT_FILE (so a
test can count spawns); without READY_FILE it exits with code 3 before speaking MCP.
"""

import sys
from pathlib import Path

count_file, ready_file = Path(sys.argv[1]), Path(sys.argv[2])
with count_file.open("a") as starts:
    starts.write("start\n")
if not ready_file.exists():
    print("flaky_start: not ready, exiting", file=sys.stderr, flush=True)
    sys.exit(3)

from echo import mcp  # noqa: E402  (tests/servers is sys.path[0] when run as a script)

mcp.run(show_banner=False)
