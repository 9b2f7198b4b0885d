"""Secrets by reference: `${env:NAME}` in a header is stored as written and resolved only to connect,
only for names (and hosts) the operator allows, and the value never shows anywhere.

End to end against a real HTTP server that reports the headers it received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from bridge_support import BridgeDirs, MakeBridge, error, ok
from helpers import start_http_fixture

from bridge.errors import BridgeError
from bridge.tools import secrets

TOKEN = "ghp_resolved-secret-value-0123456789"


def resolve(
    headers: dict[str, str], url: str = "https://api.example.com/mcp", *allow: str, operator: bool = False
) -> dict[str, str]:
    return secrets.resolve(headers, url, allow, {"TOKEN": TOKEN, "EMPTY": ""}, operator=operator)


def test_a_reference_resolves_inside_a_value_and_plain_values_stay() -> None:
    headers = {"Authorization": "Bearer ${env:TOKEN}", "X-Plain": "plain $ {env:TOKEN}"}
    assert resolve(headers, "https://api.example.com/mcp", "TOKEN@api.example.com") == {
        "Authorization": f"Bearer {TOKEN}",
        "X-Plain": "plain $ {env:TOKEN}",
    }


@pytest.mark.parametrize(
    ("header", "allow", "says"),
    [
        ("${env:TOKEN}", (), "MCP_SECRET_ENV_ALLOW"),
        ("${env:TOKEN}", ("OTHER",), "MCP_SECRET_ENV_ALLOW"),
        ("${env:TOKEN}", ("TOKEN@github.com",), "only be sent to https://github.com:443, not to https://api.example.com:443"),
        ("${env:TOKEN}", ("TOKEN",), "only be sent to servers the operator registered"),
        ("${env:MISSING}", ("MISSING@api.example.com",), "not set"),
        ("${env:EMPTY}", ("EMPTY@api.example.com",), "not set"),
        ("${env:1BAD}", ("TOKEN",), "not a valid"),
    ],
)
def test_an_unresolvable_reference_is_invalid_argument_naming_only_the_variable(
    header: str, allow: tuple[str, ...], says: str
) -> None:
    with pytest.raises(BridgeError) as caught:
        resolve({"Authorization": header}, "https://api.example.com/mcp", *allow)
    assert caught.value.code == "invalid_argument" and says in caught.value.message
    assert TOKEN not in caught.value.message


def test_a_host_pattern_binds_the_secret_to_matching_hosts() -> None:
    assert resolve({"A": "${env:TOKEN}"}, "https://API.example.com/mcp", "TOKEN@*.example.com")["A"] == TOKEN
    with pytest.raises(BridgeError):
        resolve({"A": "${env:TOKEN}"}, "https://example.com.evil.net/mcp", "TOKEN@*.example.com")


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://api.example.com/mcp", True),
        ("https://api.example.com:443/mcp", True),
        ("https://api.example.com./mcp", True),  # the trailing dot names the same host
        ("http://api.example.com/mcp", False),  # plain http: the token would travel in clear
        ("https://api.example.com:8443/mcp", False),  # another port is another server
        ("https://api.example.com.evil.net/mcp", False),
    ],
)
def test_a_secret_binds_to_scheme_host_and_port(url: str, allowed: bool) -> None:
    if allowed:
        assert resolve({"A": "${env:TOKEN}"}, url, "TOKEN@https://api.example.com:443")["A"] == TOKEN
    else:
        with pytest.raises(BridgeError) as caught:
            resolve({"A": "${env:TOKEN}"}, url, "TOKEN@https://api.example.com:443")
        assert TOKEN not in caught.value.message


def test_plain_http_needs_the_operator_to_say_so_in_the_binding() -> None:
    assert resolve({"A": "${env:TOKEN}"}, "http://127.0.0.1:8080/mcp", "TOKEN@http://127.0.0.1:8080")["A"] == TOKEN
    with pytest.raises(BridgeError):
        resolve({"A": "${env:TOKEN}"}, "http://127.0.0.1:8080/mcp", "TOKEN@127.0.0.1")  # short form: https:443


def test_a_name_without_binding_serves_only_the_operators_servers() -> None:
    assert resolve({"A": "${env:TOKEN}"}, "https://any.example/mcp", "TOKEN", operator=True)["A"] == TOKEN
    with pytest.raises(BridgeError) as caught:
        resolve({"A": "${env:TOKEN}"}, "https://any.example/mcp", "TOKEN", operator=False)
    assert "NAME@https://host:port" in caught.value.message


@pytest.mark.parametrize("entry", ["", "1X", "A@", "A B", "A@host@x", "A@ftp://host", "A@host:x", "A@host:0"])
def test_malformed_allow_entries_are_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        secrets.parse_allow(entry)


# -- through the bridge ---------------------------------------------------------------------------


@pytest.fixture
def headers_url() -> Iterator[str]:
    with start_http_fixture("headers_echo.py") as (base, _):
        yield f"{base}/mcp"


def test_the_registry_keeps_the_reference_and_the_server_gets_the_value(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, headers_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", TOKEN)
    port = headers_url.split(":")[2].split("/")[0]
    bridge = make_bridge(secret_env_allow=(f"MCP_TEST_TOKEN@http://127.0.0.1:{port}",))
    headers_json = json.dumps({"Authorization": "Bearer ${env:MCP_TEST_TOKEN}"})
    ok(bridge.add_server("echo", url=headers_url, headers_json=headers_json))
    stored = json.loads(bridge_dirs.registry.read_text())["servers"]["echo"]["headers"]
    assert stored == {"Authorization": "Bearer ${env:MCP_TEST_TOKEN}"}

    reply = ok(bridge.call_tool("echo", "seen_headers"))
    seen = reply.data.structured_content
    assert seen is not None and all(h["authorization"] == f"Bearer {TOKEN}" for h in seen["result"])

    # Nothing the bridge shows or keeps holds the value (the call's own result is the server's words).
    shown = [ok(bridge.list_tools()).text, ok(bridge.list_tools("echo")).text]
    kept = [bridge_dirs.registry.read_text(), *(p.read_text() for p in (bridge_dirs.state / "audit").glob("*.jsonl*"))]
    assert not any(TOKEN in text for text in shown + kept)


def test_an_error_never_shows_the_resolved_value(
    make_bridge: MakeBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", TOKEN)
    bridge = make_bridge(secret_env_allow=("MCP_TEST_TOKEN@http://127.0.0.1:9",), backoff_after=100)
    headers_json = json.dumps({"Authorization": "Bearer ${env:MCP_TEST_TOKEN}"})
    ok(bridge.add_server("gone", url="http://127.0.0.1:9/mcp", headers_json=headers_json))
    data = error(bridge.list_tools("gone"), "connect_failed")
    assert TOKEN not in data.model_dump_json()


def test_an_unresolvable_reference_is_refused_at_add_time_and_nothing_is_stored(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TOKEN)
    bridge = make_bridge(secret_env_allow=("MCP_TEST_TOKEN",))
    before = bridge_dirs.registry.read_bytes()
    for header in ("${env:AWS_SECRET_ACCESS_KEY}", "${env:MCP_TEST_TOKEN}"):  # not allowed; allowed but unset
        data = error(
            bridge.add_server("x", url="https://evil.example/mcp", headers_json=json.dumps({"A": header})),
            "invalid_argument",
        )
        assert TOKEN not in data.model_dump_json()
    assert bridge_dirs.registry.read_bytes() == before


def test_a_variable_removed_after_adding_fails_the_connection_clearly(
    make_bridge: MakeBridge, headers_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", TOKEN)
    port = headers_url.split(":")[2].split("/")[0]
    bridge = make_bridge(secret_env_allow=(f"MCP_TEST_TOKEN@http://127.0.0.1:{port}",))
    ok(bridge.add_server("echo", url=headers_url, headers_json='{"A": "${env:MCP_TEST_TOKEN}"}'))
    monkeypatch.delenv("MCP_TEST_TOKEN")
    assert "not set" in error(bridge.call_tool("echo", "seen_headers"), "invalid_argument").message
