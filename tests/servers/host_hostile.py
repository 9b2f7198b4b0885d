"""Host-hostile fixture (stdlib only): a handshake-era stdio MCP server whose tools each break one
rule of what hosts accept, beside tools that break none, for `mcp-bridge probe`.

``python host_hostile.py`` offers every tool; ``python host_hostile.py good`` only the well-formed ones.

- ``claude_ready``: what Claude wants (no ``$schema``, title, four annotations, outputSchema,
  taskSupport forbidden); ChatGPT accepts it but would like draft-07 declared.
- ``chatgpt_complete``: ChatGPT's complete shape (both schemas declare draft-07); Claude Code
  refuses its draft-07 outputSchema.
- ``dotted.name``: a name outside Claude's ``^[a-zA-Z0-9_-]{1,64}$``.
- ``oversized``: an inputSchema over 16 KiB serialized.
- ``task_only``: ``execution.taskSupport: "required"``.
- ``tuple_items``: a draft-07 tuple (``items`` as an array), which ChatGPT rejects and 2020-12 forbids.
- ``enum_default_items``: ``items: [...]`` inside a ``default`` value only, which is no schema.
Exits on stdin EOF.
"""

import json
import sys

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
ANNOTATIONS = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}}


def tool(name, **fields):
    return {"name": name, "inputSchema": dict(OBJECT), **fields}


GOOD = [
    tool(
        "claude_ready",
        title="Claude ready",
        annotations=ANNOTATIONS,
        outputSchema={"type": "object", "properties": {"text": {"type": "string"}}},
        execution={"taskSupport": "forbidden"},
    ),
    tool(
        "enum_default_items",
        title="Items in a default value",
        annotations=ANNOTATIONS,
        inputSchema={"type": "object", "properties": {"shape": {"type": "object", "default": {"items": [1, 2]}}}},
    ),
]
BAD = [
    tool(
        "chatgpt_complete",
        title="ChatGPT complete",
        annotations=ANNOTATIONS,
        inputSchema={"$schema": DRAFT_07, **OBJECT},
        outputSchema={"$schema": DRAFT_07, **OBJECT},
        execution={"taskSupport": "forbidden"},
    ),
    tool("dotted.name", title="Dotted name", annotations=ANNOTATIONS),
    tool(
        "oversized",
        title="Oversized",
        annotations=ANNOTATIONS,
        inputSchema={
            "type": "object",
            "properties": {f"field_{i:03d}": {"type": "string", "description": "x" * 200} for i in range(100)},
        },
    ),
    tool("task_only", title="Task only", annotations=ANNOTATIONS, execution={"taskSupport": "required"}),
    tool(
        "tuple_items",
        title="Tuple items",
        annotations=ANNOTATIONS,
        inputSchema={"type": "object", "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]}}},
    ),
]
TOOLS = GOOD if sys.argv[1:] == ["good"] else GOOD + BAD


def handle(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "host-hostile", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    return None


def main():
    for line in sys.stdin:
        message = json.loads(line) if line.strip() else None
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue  # a notification or a response: nothing to answer
        result = handle(message["method"], message.get("params") or {})
        if result is None:
            reply = {"error": {"code": -32601, "message": f"Method not found: {message['method']}"}}
        else:
            reply = {"result": result}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
