"""Traces: each tool call is a span, its downstream request a child span, when OpenTelemetry is set up.

The bridge only uses the OpenTelemetry API (which FastMCP depends on and uses for its own server
spans). With no tracer provider configured, `span` makes no span at all: the API's no-op spans
still cost a warm call about 50 µs; for the same reason a bridge that serves with none turns
FastMCP's own telemetry off (`telemetry_mode="off"`). Attributes name the server, the tools,
whether the session was reused or started, and the outcome code; never an argument, header, env
or token value.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from bridge import __version__

tracer = trace.get_tracer("mcp_bridge", __version__)

SERVER = "mcp_bridge.server"
TOOL = "mcp_bridge.tool"
DOWNSTREAM_TOOL = "mcp_bridge.downstream_tool"
OUTCOME = "mcp_bridge.outcome"
SESSION = "mcp_bridge.session"  # "reused" or "started"
CALLER = "mcp_bridge.caller"


def configured() -> bool:
    """Whether a tracer provider is set up (by `opentelemetry-instrument`, or the launcher's code)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def span(name: str, kind: SpanKind) -> AbstractContextManager[Span]:
    """A new current span, or, with no tracer provider set up, the invalid span (which records nothing)."""
    if not configured():
        return nullcontext(trace.INVALID_SPAN)
    return tracer.start_as_current_span(name, kind=kind)
