"""The smallest stdio MCP server: standard library only, answers `initialize`, `ping` and an empty
`tools/list`. For measuring what a sandbox adds to a spawn, not what a framework costs."""

import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    result = {}
    if message.get("method") == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {},
            "serverInfo": {"name": "tiny", "version": "0"},
        }
    elif message.get("method") == "tools/list":
        result = {"tools": []}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
