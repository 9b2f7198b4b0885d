"""The `mcp-bridge` command line: serve (the default), servers, import, probe, config, audit."""
