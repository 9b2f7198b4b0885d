"""Hang fixture (stdlib only): never answers anything. Used for timeout tests.

It ignores SIGTERM, reads and discards stdin, and keeps hanging after stdin EOF, so only
SIGKILL ends it (the SDK's close path: stdin closed, 2 s, SIGTERM, 2 s, SIGKILL).
With ``--exit-on-eof`` it exits when stdin closes instead (cheaper for plain timeout tests).
Extra arguments are ignored: pass a unique token to find the process with pids_with_marker().
"""

import signal
import sys

signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("hang: started, will never answer", file=sys.stderr, flush=True)

while sys.stdin.buffer.read1(65536):
    pass
if "--exit-on-eof" in sys.argv[1:]:
    sys.exit(0)
while True:
    signal.pause()
