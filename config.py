"""The developer's servers: the registry's first layer, owned by whoever runs the bridge.

`MCP_SERVERS` is the developer-owned layer of the registry: servers provisioned in source, which the
conversation can use but never change or remove. Entries have the same shape as the dynamic
registry's, and may also carry `env` (stdio), `network` (stdio: "deny" or "allow") and
`write_paths` (stdio: extra writable capability paths), which only the developer may grant, and
`tools`, a tool policy (`allow` / `deny` name patterns, `read_only`) that binds the name even when
the conversation adds a dynamic entry of the same name.

    MCP_SERVERS = {
        "time": {"transport": "stdio", "command": "/usr/local/bin/mcp-server-time", "args": []},
        "docs": {"transport": "http", "url": "https://example.com/mcp", "headers": {}},
        "db": {"transport": "http", "url": "https://db.example.com/mcp", "tools": {"read_only": True}},
    }
"""

from __future__ import annotations

from typing import Any

MCP_SERVERS: dict[str, dict[str, Any]] = {}
