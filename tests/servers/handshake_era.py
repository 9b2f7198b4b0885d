"""Handshake-era fixture (stdlib only, no SDK): a minimal newline-delimited JSON-RPC stdio MCP
server of the pre-2026 era, like many servers in the wild.

- ``initialize``: echoes the client's protocolVersion if it knows it, else answers 2025-06-18;
  serverInfo name "handshake-era".
- ``tools/list``: one tool ``echo(text: str)``; ``tools/call`` echo -> "handshake-era: <text>".
- ``ping`` -> {}. Notifications and responses are ignored.
- Any other method (notably ``server/discover``) -> JSON-RPC error -32601 Method not found,
  which makes an SDK client in mode="auto" fall back to the initialize handshake.
Exits on stdin EOF.
"""

import json
import sys

KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
FALLBACK_VERSION = "2025-06-18"

ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text prefixed with 'handshake-era: '.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


class RpcError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def handle(method: str, params: dict) -> dict:
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in KNOWN_VERSIONS else FALLBACK_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "handshake-era", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [ECHO_TOOL]}
    if method == "tools/call":
        if params.get("name") != "echo":
            raise RpcError(-32602, f"Unknown tool: {params.get('name')}")
        text = (params.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": f"handshake-era: {text}"}], "isError": False}
    raise RpcError(-32601, f"Method not found: {method}")


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue  # a notification or a response: nothing to answer
        try:
            result = handle(message["method"], message.get("params") or {})
        except RpcError as e:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": e.code, "message": e.message}})
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
