"""SSRF rules through the Bridge: what the conversation may register and reach, against who else may.

Only loopback is ever dialled: refused targets are judged before any connection, and a listening
socket nobody may reach shows that no connection was even attempted.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from bridge_support import BridgeDirs, MakeBridge, error, ok
from helpers import start_http_fixture

SERVED_OVER_HTTP = {"served_over_http": True}


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    with start_http_fixture("echo.py") as (base, _):
        yield f"{base}/mcp"


def test_the_conversation_cannot_register_loopback_while_served_over_http(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, echo_url: str
) -> None:
    bridge = make_bridge(**SERVED_OVER_HTTP)
    before = bridge_dirs.registry.read_bytes()
    data = error(bridge.add_server("local", url=echo_url), "forbidden")
    assert "127.0.0.1 is this machine" in data.message and "MCP_HTTP_ALLOW_PRIVATE" in data.message
    assert bridge_dirs.registry.read_bytes() == before


def test_the_operator_allows_private_targets_and_the_same_url_works(make_bridge: MakeBridge, echo_url: str) -> None:
    bridge = make_bridge(http_allow_private=True, **SERVED_OVER_HTTP)
    ok(bridge.add_server("local", url=echo_url))
    assert "echo" in ok(bridge.list_tools("local")).text


def test_over_stdio_the_conversation_may_reach_loopback(make_bridge: MakeBridge, echo_url: str) -> None:
    bridge = make_bridge()
    ok(bridge.add_server("local", url=echo_url))
    assert "echo" in ok(bridge.list_tools("local")).text


def test_the_cli_and_the_developer_config_may_register_loopback_while_served_over_http(
    make_bridge: MakeBridge, echo_url: str
) -> None:
    cli = make_bridge(caller="cli", **SERVED_OVER_HTTP)
    ok(cli.add_server("by-cli", url=echo_url))
    host = make_bridge({"by-config": {"transport": "http", "url": echo_url}}, **SERVED_OVER_HTTP)
    assert "echo" in ok(host.list_tools("by-cli")).text  # the CLI's entry keeps its provenance
    assert "echo" in ok(host.list_tools("by-config")).text


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://metadata.google.internal/"]
)
def test_metadata_services_are_refused_to_the_conversation_even_over_stdio(make_bridge: MakeBridge, url: str) -> None:
    bridge = make_bridge(http_allow_private=True)
    assert "cloud metadata" in error(bridge.add_server("meta", url=url), "forbidden").message


def test_a_planted_conversation_entry_is_judged_again_at_connect_time_and_nothing_is_dialled(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, untouched: socket.socket
) -> None:
    """An entry written before the rules existed (or by a bridge served over stdio) counts as the
    conversation's: a bridge served over HTTP refuses it before opening a socket."""
    port = untouched.getsockname()[1]
    for url in (f"http://127.0.0.1:{port}/mcp", f"http://2130706433:{port}/mcp", f"http://[::ffff:127.0.0.1]:{port}/mcp"):
        stdio_face = make_bridge()
        ok(stdio_face.add_server("planted", url=url))
        data = error(make_bridge(**SERVED_OVER_HTTP).list_tools("planted"), "forbidden")
        assert "127.0.0.1 is this machine" in data.message


def test_the_same_planted_entry_is_dialled_where_private_targets_are_allowed(
    make_bridge: MakeBridge, echo_url: str
) -> None:
    ok(make_bridge().add_server("planted", url=echo_url))
    assert "echo" in ok(make_bridge(http_allow_private=True, **SERVED_OVER_HTTP).list_tools("planted")).text


@pytest.mark.parametrize(
    "header",
    ["Host", "host", "Connection", "Transfer-Encoding", "Content-Length", "Upgrade", "TE", "Trailer", "Keep-Alive",
     "Proxy-Authorization", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "Metadata-Flavor", "Metadata",
     "X-aws-ec2-metadata-token", "X-aws-ec2-metadata-token-ttl-seconds", "X-Google-Metadata-Request"],
)
def test_routing_and_metadata_headers_cannot_be_registered(make_bridge: MakeBridge, header: str) -> None:
    bridge = make_bridge()
    data = error(bridge.add_server("x", url="https://api.example.com/mcp", headers_json=json.dumps({header: "v"})), "forbidden")
    assert repr(header) in data.message


def test_ordinary_headers_are_registered(make_bridge: MakeBridge) -> None:
    headers = {"Authorization": "Bearer abc", "X-Api-Key": "k", "User-Agent": "me"}
    ok(make_bridge().add_server("x", url="https://api.example.com/mcp", headers_json=json.dumps(headers)))
