"""Forking fixture (stdlib only): proves that closing a server kills its whole process group.

It forks a grandchild (same process group, same argv) that ignores SIGTERM and sleeps forever.
The grandchild's pid is written to the file named by env var FIXTURE_PID_FILE if set (atomically),
then always printed to stderr as ``forking: grandchild pid <n>`` (after the file exists).
The parent then ignores SIGTERM and hangs without ever answering, even after stdin EOF.
Extra arguments are ignored: pass a unique token to find both processes with pids_with_marker().
"""

import os
import signal
import sys

signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the grandchild

pid = os.fork()
if pid == 0:  # grandchild
    while True:
        signal.pause()

pid_file = os.environ.get("FIXTURE_PID_FILE")
if pid_file:
    with open(pid_file + ".tmp", "w") as f:
        f.write(f"{pid}\n")
    os.replace(pid_file + ".tmp", pid_file)
print(f"forking: grandchild pid {pid}", file=sys.stderr, flush=True)

while sys.stdin.buffer.read1(65536):
    pass
while True:
    signal.pause()
