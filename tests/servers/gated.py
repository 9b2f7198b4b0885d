"""Capability-gated fixture (stdlib only): lists a tool only to a client that can answer it, as the
reference "everything" server lists `trigger-elicitation-request` only to a client declaring
elicitation.

- ``initialize``: remembers the client's capabilities; handshake era only (``server/discover`` and
  any other method -> -32601, so an SDK client falls back to the handshake).
- ``tools/list``: ``echo`` always; ``ask_user`` too when the client declared ``elicitation``.
Exits on stdin EOF.
"""

import json
import sys

ECHO = {"name": "echo", "description": "Echo the text.", "inputSchema": {"type": "object"}}
ASK_USER = {"name": "ask_user", "description": "Ask the user a question.", "inputSchema": {"type": "object"}}

capabilities: dict = {}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    method, params = message["method"], message.get("params") or {}
    reply: dict = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        capabilities = params.get("capabilities") or {}
        reply["result"] = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "gated", "version": "1.0.0"},
        }
    elif method == "ping":
        reply["result"] = {}
    elif method == "tools/list":
        reply["result"] = {"tools": [ECHO, ASK_USER] if "elicitation" in capabilities else [ECHO]}
    else:
        reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
