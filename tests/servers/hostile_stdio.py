"""Hostile stdio fixture (stdlib only): one misbehaving child per ``--mode``, for the bridge's
hostile-children matrix. Modes that answer at all build on the handshake-era server.

- ``crash-in-initialize``: reads the first request (the handshake), writes a few stderr lines and
  exits with code 4 without answering.
- ``not-json``: prints a banner and answers every line with text that is not JSON; never JSON.
- ``not-jsonrpc``: answers every request with valid JSON that is not JSON-RPC (``{"status": "ok"}``).
- ``wrong-id``: answers every request correctly, but under an id the client never sent.
- ``wrong-shape``: answers every request with a JSON-RPC result of the wrong shape
  (``protocolVersion`` a number, ``capabilities`` a list): valid JSON-RPC, not MCP.
- ``huge``: a working server whose tool ``huge`` answers with a 20 MB text result on one line.
- ``stderr-flood``: a working server that writes to stderr without end from its first moment.
- ``fork-and-exit``: forks a grandchild that leaves the process group (``setsid``), ignores
  SIGTERM and keeps stdout and stderr open forever; the parent then exits with code 5.

Extra arguments are ignored: pass a unique token to find the processes with pids_with_marker().
"""

import json
import os
import signal
import sys
import threading

from handshake_era import ECHO_TOOL, RpcError, handle, send

HUGE_CHARS = 20_000_000
HUGE_TOOL = {"name": "huge", "description": "Return 20 MB of text.", "inputSchema": {"type": "object"}}
CRASH_EXIT_CODE = 4
FORK_EXIT_CODE = 5


def requests():
    """Each JSON-RPC request on stdin (notifications and responses skipped); ends at stdin EOF."""
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and "method" in message and "id" in message:
            yield message


def answer(message: dict) -> dict:
    """What the handshake-era server answers, plus the tool ``huge``."""
    params = message.get("params") or {}
    if message["method"] == "tools/list":
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [ECHO_TOOL, HUGE_TOOL]}}
    if message["method"] == "tools/call" and params.get("name") == "huge":
        return {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": "x" * HUGE_CHARS}]}}
    try:
        return {"jsonrpc": "2.0", "id": message["id"], "result": handle(message["method"], params)}
    except RpcError as e:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": e.code, "message": e.message}}


def flood_stderr() -> None:
    line = b"stderr-flood: " + b"z" * 200 + b"\n"
    while True:
        os.write(2, line * 64)


def fork_and_exit() -> None:
    if os.fork() == 0:  # grandchild: its own session, deaf to SIGTERM, holding the pipes
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            signal.pause()
    print("fork-and-exit: grandchild started, parent exiting", file=sys.stderr, flush=True)
    sys.exit(FORK_EXIT_CODE)


def main(mode: str) -> None:
    if mode == "fork-and-exit":
        fork_and_exit()
    if mode == "stderr-flood":
        threading.Thread(target=flood_stderr, daemon=True).start()
    if mode == "not-json":
        print("Welcome to not-json 1.0, an interactive shell.", flush=True)
        for _ in sys.stdin:
            print("Unknown command. Type 'help' for usage.", flush=True)
        return
    for message in requests():
        if mode == "crash-in-initialize":
            print("crash-in-initialize: got the handshake", file=sys.stderr)
            print("fatal: crashed while initializing", file=sys.stderr, flush=True)
            sys.exit(CRASH_EXIT_CODE)
        elif mode == "not-jsonrpc":
            send({"status": "ok", "echo": message["method"]})
        elif mode == "wrong-id":
            reply = answer(message)
            reply["id"] = f"not-{message['id']}"
            send(reply)
        elif mode == "wrong-shape":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": 2025, "capabilities": []}})
        else:  # huge, stderr-flood: a working server
            send(answer(message))


if __name__ == "__main__":
    main(sys.argv[1])
