"""Traces: with OpenTelemetry set up, each tool call is a span and its downstream request a child
span, with the server, tools, session reuse and outcome as attributes and nothing secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bridge_support import MakeBridge
from helpers import fixture_path
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
trace.set_tracer_provider(_provider)  # once per process; the bridge's tracer is a proxy until then


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def named(spans: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in spans.get_finished_spans() if span.name == name]


def test_a_call_is_a_span_with_its_downstream_request_as_a_child(make_bridge: MakeBridge, spans: InMemorySpanExporter) -> None:
    bridge = make_bridge()
    secret = "Bearer s3cr3t-never-in-a-span"
    bridge.add_server("echo", command=sys.executable, args_json=json.dumps([fixture_path("echo")]))
    bridge.add_server("remote", url="http://127.0.0.1:9/mcp", headers_json=json.dumps({"Authorization": secret}))
    for text in ("first", "second"):
        assert bridge.call_tool("echo", "echo", json.dumps({"text": text})).text == text
    bridge.call_tool("remote", "anything", "{}")

    calls = named(spans, "mcp_call_tool")
    assert [span.attributes["mcp_bridge.outcome"] for span in calls] == ["ok", "ok", "connect_failed"]
    first = calls[0].attributes
    assert first["mcp_bridge.server"] == "echo" and first["mcp_bridge.downstream_tool"] == "echo"
    assert first["mcp_bridge.tool"] == "mcp_call_tool" and first["mcp_bridge.caller"] == "host"
    assert calls[2].status.status_code == trace.StatusCode.ERROR

    requests = [span for span in named(spans, "tools/call") if span.attributes["mcp_bridge.server"] == "echo"]
    assert [span.parent.span_id for span in requests] == [calls[0].context.span_id, calls[1].context.span_id]
    assert [span.attributes["mcp_bridge.session"] for span in requests] == ["started", "reused"]
    assert requests[0].kind == trace.SpanKind.CLIENT

    exported = json.dumps([dict(span.attributes or {}) for span in spans.get_finished_spans()])
    assert "s3cr3t" not in exported and "first" not in exported  # neither header values nor arguments



def test_the_child_span_keeps_its_parent_across_the_hop_to_the_worker_loop(
    make_bridge: MakeBridge, spans: InMemorySpanExporter
) -> None:
    """As over HTTP: the tool runs on the host face's own loop, the downstream request on the worker's."""
    import anyio

    bridge = make_bridge()
    bridge.add_server("echo", command=sys.executable, args_json=json.dumps([fixture_path("echo")]))
    reply = anyio.run(lambda: bridge.call_tool_async("echo", "echo", '{"text": "hop"}'))
    assert reply.text == "hop"
    [call] = named(spans, "mcp_call_tool")
    [request] = named(spans, "tools/call")
    assert request.parent is not None and request.parent.span_id == call.context.span_id


def test_with_no_tracer_provider_no_span_is_made() -> None:
    """Off and free: the API's no-op spans still cost a warm call ~50 µs, so none is started."""
    script = (
        "from opentelemetry import trace\n"
        "from opentelemetry.trace import SpanKind\n"
        "from bridge import telemetry\n"
        "with telemetry.span('mcp_call_tool', SpanKind.INTERNAL) as span:\n"
        "    assert span is trace.INVALID_SPAN and trace.get_current_span() is trace.INVALID_SPAN\n"
        "print('none')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "none", done.stderr


@pytest.mark.parametrize("provider", [False, True], ids=["none", "set-up"])
def test_a_bridge_serving_with_no_tracer_provider_turns_fastmcps_own_telemetry_off(
    provider: bool, tmp_path: Path
) -> None:
    """FastMCP's seam span per request would be another no-op costing each call; with a provider
    set up before serving (as `opentelemetry-instrument` does), FastMCP's spans stay on."""
    seen = tmp_path / "mode"
    launcher = "\n".join([
        "import atexit, sys",
        "import fastmcp",
        f"atexit.register(lambda: open({str(seen)!r}, 'w').write(fastmcp.settings.telemetry_mode))",
        *(["from opentelemetry import trace", "from opentelemetry.sdk.trace import TracerProvider",
           "trace.set_tracer_provider(TracerProvider())"] if provider else []),
        "from bridge.cli.main import main",
        "sys.exit(main())",
    ])  # fmt: skip
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "MCP_STATE_DIR": str(tmp_path / "state"),
           "MCP_WORKSPACE": str(tmp_path)}  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", launcher], input=b"", capture_output=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert seen.read_text() == ("native" if provider else "off")
