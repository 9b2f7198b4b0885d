"""Pushy fixture (stdlib only): a handshake-era stdio server that sends its requests whatever the
client declared, as many servers in the wild do.

- ``initialize`` answers 2025-06-18; ``server/discover`` is unknown (-32601), so clients fall back;
- ``tools/call ask {question}`` sends ``elicitation/create`` and answers with the action it got;
- ``tools/call sample {prompt}`` sends ``sampling/createMessage``; an error answer becomes an
  ``isError`` result quoting it.
Handles one call at a time; exits on stdin EOF.
"""

import json
import sys

TOOLS = [
    {"name": "ask", "inputSchema": {"type": "object", "properties": {"question": {"type": "string"}}}},
    {"name": "sample", "inputSchema": {"type": "object", "properties": {"prompt": {"type": "string"}}}},
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask_client(request_id: str, method: str, params: dict) -> dict:
    """Send a request to the client and read until its answer (other lines are dropped)."""
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message
    raise SystemExit(0)


def call(name: str, arguments: dict, serial: int) -> dict:
    if name == "ask":
        schema = {"type": "object", "properties": {"value": {"type": "string"}}}
        params = {"message": arguments.get("question", ""), "requestedSchema": schema}
        answer = ask_client(f"s{serial}", "elicitation/create", params)
        action = answer.get("result", {}).get("action", "error")
        return {"content": [{"type": "text", "text": action}], "isError": False}
    messages = [{"role": "user", "content": {"type": "text", "text": arguments.get("prompt", "")}}]
    answer = ask_client(f"s{serial}", "sampling/createMessage", {"messages": messages, "maxTokens": 20})
    if "error" in answer:
        return {"content": [{"type": "text", "text": f"refused: {answer['error']['message']}"}], "isError": True}
    return {"content": [{"type": "text", "text": f"sampled: {answer['result']['content']['text']}"}], "isError": False}


def main() -> None:
    serial = 0
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        method, params = message["method"], message.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "pushy", "version": "1.0.0"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            serial += 1
            result = call(params["name"], params.get("arguments") or {}, serial)
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}})
            continue
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()
