"""Traces: each tool call is a span, its downstream request a child span, when OpenTelemetry is set up.

The bridge only uses the OpenTelemetry API (which FastMCP depends on and uses for its own server
spans): with no tracer provider configured, every span is a no-op. Attributes name the server, the
tools, whether the session was reused or started, and the outcome code; never an argument, header,
env or token value.
"""

from __future__ import annotations

from opentelemetry import trace

from bridge import __version__

tracer = trace.get_tracer("mcp_bridge", __version__)

SERVER = "mcp_bridge.server"
TOOL = "mcp_bridge.tool"
DOWNSTREAM_TOOL = "mcp_bridge.downstream_tool"
OUTCOME = "mcp_bridge.outcome"
SESSION = "mcp_bridge.session"  # "reused" or "started"
CALLER = "mcp_bridge.caller"
