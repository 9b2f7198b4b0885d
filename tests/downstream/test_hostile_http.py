"""Hostile HTTP servers, as a matrix: real servers on 127.0.0.1 random ports that refuse, stall,
fail, redirect for ever, answer HTML, or send bodies without end. Each call must end with the right
code within MCP_TIMEOUT plus a grace, and the secret headers the bridge sends must never come back in
an error, even from a server that quotes them. Peak memory is measured on a real bridge process.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from bridge_support import MakeBridge, error, ok
from helpers import start_http_fixture
from hostile_support import (
    BOUND_S,
    PEAK_RSS_BOUND_MIB,
    TIMEOUT_S,
    peak_rss_mib,
    real_bridge,
    timed,
)
from servers.hostile_http import PLANTED

from bridge.errors import ErrorResult

SECRET = "sk-canary-3f9a1c77e2"
API_KEY = "key-canary-b41d09"
HEADERS = {"Authorization": f"Bearer {SECRET}", "X-Api-Key": API_KEY}


@dataclass(frozen=True)
class Server:
    """One row: which fixture serves the URL path, and what must come back."""

    fixture: str  # "hostile" (hostile_http.py), "errors" (http_errors.py) or "refused" (nothing listens)
    path: str
    code: str
    says: str = ""


MATRIX = {
    "connection-refused": Server("refused", "/mcp", "connect_failed", "Cannot connect"),
    "never-answers-headers": Server("hostile", "/silent", "timeout", "did not start within 3 s (MCP_START_TIMEOUT)"),
    "401": Server("errors", "/status/401", "http_error", "HTTP 401"),
    "403": Server("errors", "/status/403", "http_error", "HTTP 403"),
    "404": Server("errors", "/status/404", "http_error", "HTTP 404"),
    "500": Server("errors", "/status/500", "connect_failed", "HTTP 500"),
    "html-page": Server("errors", "/html", "protocol_error", "text/html"),
    "redirect-loop": Server("hostile", "/loop", "http_error", "redirects in a loop"),
    "redirect-to-another-origin": Server("hostile", "/elsewhere", "http_error", "to https://example.invalid/mcp)"),
    "endless-json-body": Server("hostile", "/endless-json", "protocol_error", "over 16 MiB"),
    "endless-sse-event": Server("hostile", "/endless-sse", "protocol_error", "16777216 byte limit"),
    "gzip-bomb": Server("hostile", "/gzip-bomb", "protocol_error", "not a JSON-RPC message (HTTP 200, application/json)"),
    "quotes-the-headers-back": Server("hostile", "/reflect", "protocol_error", "Authorization: [redacted]"),
    "quotes-a-piece-of-each-header": Server("hostile", "/reflect-piece", "protocol_error", "X-Api-Key: [redacted]"),
    "json-that-is-not-json-rpc": Server(
        "hostile", "/not-jsonrpc", "protocol_error", "not a JSON-RPC message (HTTP 200, application/json)"
    ),
}


@pytest.fixture(scope="module")
def bases() -> Iterator[dict[str, str]]:
    with start_http_fixture("hostile_http.py") as (hostile, _), start_http_fixture("http_errors.py") as (errors, _):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            refused = f"http://127.0.0.1:{sock.getsockname()[1]}"  # free once the socket closes
        yield {"hostile": hostile, "errors": errors, "refused": refused}


def assert_no_secret(text: str) -> None:
    """No secret, nor any 8-character piece of one."""
    for secret in (SECRET, API_KEY):
        assert not [secret[i : i + 8] for i in range(len(secret) - 7) if secret[i : i + 8] in text], text


@pytest.mark.parametrize("server", MATRIX.values(), ids=MATRIX.keys())
def test_a_hostile_http_server_gets_its_code_in_bounded_time_and_never_sees_its_headers_echoed(
    make_bridge: MakeBridge, bases: dict[str, str], server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bridge = make_bridge(timeout=TIMEOUT_S, start_timeout=TIMEOUT_S)
    ok(bridge.add_server("hostile", url=bases[server.fixture] + server.path, headers_json=json.dumps(HEADERS)))

    reply, elapsed = timed(lambda: bridge.call_tool("hostile", "echo", '{"text": "hi"}'))
    data = error(reply, server.code)

    print(f"{server.code} in {elapsed:.2f} s")
    assert server.says in data.message
    assert elapsed < BOUND_S
    assert_no_secret(reply.text)
    assert_no_secret(data.model_dump_json())
    assert PLANTED not in reply.text and PLANTED not in data.model_dump_json()  # nothing of the answer is quoted
    assert_no_secret(caplog.text)


def test_a_redirect_elsewhere_names_the_target_without_its_query(make_bridge: MakeBridge, bases: dict[str, str]) -> None:
    bridge = make_bridge(timeout=TIMEOUT_S, start_timeout=TIMEOUT_S)
    ok(bridge.add_server("moved", url=bases["hostile"] + "/elsewhere"))
    data = error(bridge.list_tools("moved"), "http_error")
    assert data.detail == {"status": 307, "redirect_loop": False}
    assert "from-the-query" not in data.message


def test_a_real_bridge_stays_small_through_endless_bodies_and_a_gzip_bomb(bases: dict[str, str]) -> None:
    with real_bridge() as bridge:
        codes: dict[str, str] = {}
        for path in ("/endless-json", "/endless-sse", "/gzip-bomb", "/reflect", "/reflect-piece", "/not-jsonrpc"):
            bridge.add("hostile", url=bases["hostile"] + path, headers_json=json.dumps(HEADERS))
            failed, elapsed = bridge.call("hostile", "echo")
            codes[path] = ErrorResult.model_validate(failed).code
            assert elapsed < BOUND_S
            assert_no_secret(json.dumps(failed))
            assert PLANTED not in json.dumps(failed)
        peak = peak_rss_mib(bridge.pid)
        log = bridge.process.stderr

    print(f"peak RSS {peak:.1f} MiB")
    assert set(codes.values()) == {"protocol_error"}, codes
    assert peak < PEAK_RSS_BOUND_MIB, f"peak RSS {peak:.0f} MiB"
    assert_no_secret(log)
