"""The smallest stdio MCP server: standard library only, answers `initialize` and `ping`, then
echoes nothing else. For measuring what a sandbox adds to a spawn, not what a framework costs."""

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
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
