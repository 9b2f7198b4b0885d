"""A server added in conversation gets its API key by reference: `env_json` holds `${env:NAME}` only,
resolved at each start for the names the operator binds to that server name
(`MCP_SECRET_ENV_ALLOW=NAME@server:<name>`), and the key shows nowhere: not in the reply, the
listing, the registry, the audit or the log.

End to end against a real sandboxed stdio server that reports whether (and which) key it received.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from pathlib import Path

import pytest
from bridge_support import BridgeDirs, MakeBridge, StdioArgs, error, ok
from pydantic import ValidationError

from bridge.settings import Settings
from bridge.tools import Bridge

KEY = "wk-live-5f0c1e9a7b3d4e2f-the-weather-key"
REFERENCE = json.dumps({"WEATHER_API_KEY": "${env:WEATHER_API_KEY}"})
ALLOW_WEATHER = ("WEATHER_API_KEY@server:weather",)


@pytest.fixture(autouse=True)
def weather_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's key, in the bridge's own environment only."""
    monkeypatch.setenv("WEATHER_API_KEY", KEY)


def add_weather(bridge: Bridge, stdio_args: StdioArgs, name: str = "weather", env_json: str | None = REFERENCE):
    return bridge.add_server(name, command=sys.executable, args_json=stdio_args("weather"), env_json=env_json)


def forecast(bridge: Bridge, name: str = "weather"):
    return bridge.call_tool(name, "forecast", '{"city": "Paris"}')


def everything_kept(dirs: BridgeDirs) -> str:
    """Every file the bridge wrote under its state dir (registry, audit, indexes), as text."""
    return "".join(path.read_text(errors="replace") for path in sorted(dirs.state.rglob("*")) if path.is_file())


def test_an_allowed_reference_gives_the_server_its_key_and_the_key_shows_nowhere(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, stdio_args: StdioArgs, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER)
    added = ok(add_weather(bridge, stdio_args))
    assert "WEATHER_API_KEY=${env:WEATHER_API_KEY}" in added.text
    answer = ok(forecast(bridge))
    assert f"sha256 {hashlib.sha256(KEY.encode()).hexdigest()}" in answer.text
    listed = ok(bridge.list_tools())
    assert json.loads(bridge_dirs.registry.read_text())["servers"]["weather"]["secret_env"] == {
        "WEATHER_API_KEY": "${env:WEATHER_API_KEY}"
    }
    shown = [added.text, answer.text, listed.text, json.dumps(listed.data.model_dump(mode="json")), caplog.text]
    assert not any(KEY in text for text in [*shown, everything_kept(bridge_dirs)])


def test_a_server_added_without_env_json_does_not_get_the_key(make_bridge: MakeBridge, stdio_args: StdioArgs) -> None:
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER)
    ok(add_weather(bridge, stdio_args, env_json=None))
    assert "WEATHER_API_KEY is not set" in error(forecast(bridge), "tool_error").message


def test_a_reference_bound_to_another_server_name_is_refused_saying_what_to_allow(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, stdio_args: StdioArgs
) -> None:
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER)
    refused = error(add_weather(bridge, stdio_args, name="other"), "invalid_argument")
    assert refused.message == (
        "${env:WEATHER_API_KEY} is not allowed for server 'other': the operator allows it by adding "
        "WEATHER_API_KEY@server:other to MCP_SECRET_ENV_ALLOW."
    )
    error(bridge.list_tools("other"), "unknown_server")
    assert KEY not in everything_kept(bridge_dirs)


@pytest.mark.parametrize(
    "allow",
    [(), ("AWS_SECRET_ACCESS_KEY@server:weather",), ("WEATHER_API_KEY",), ("WEATHER_API_KEY@weather.example.com",)],
    ids=["nothing", "another-variable", "operator-servers-only", "a-header-origin"],
)
def test_a_reference_the_operator_does_not_bind_to_the_server_is_refused(
    make_bridge: MakeBridge, stdio_args: StdioArgs, allow: tuple[str, ...]
) -> None:
    bridge = make_bridge(secret_env_allow=allow)
    refused = error(add_weather(bridge, stdio_args), "invalid_argument")
    assert "WEATHER_API_KEY@server:weather" in refused.message and KEY not in refused.message


def test_a_literal_value_is_refused_with_the_reason_and_never_echoed(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, stdio_args: StdioArgs, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER)
    for literal in (KEY, f"prefix ${{env:WEATHER_API_KEY}} {KEY}", "${env:WEATHER_API_KEY}${env:HOME}"):
        refused = error(add_weather(bridge, stdio_args, env_json=json.dumps({"WEATHER_API_KEY": literal})), "invalid_argument")
        assert refused.message.startswith("env_json's WEATHER_API_KEY must be a reference like ${env:WEATHER_API_KEY}")
        assert "MCP_SECRET_ENV_ALLOW=WEATHER_API_KEY@server:" in refused.message
        assert KEY not in refused.message
    assert KEY not in caplog.text and KEY not in everything_kept(bridge_dirs)
    error(bridge.list_tools("weather"), "unknown_server")


@pytest.mark.parametrize("variable", ["LD_PRELOAD", "PATH", "HOME", "HTTPS_PROXY", "NODE_OPTIONS", "XDG_CONFIG_HOME", "1BAD"])
def test_env_json_may_not_set_what_the_sandbox_sets_or_what_steers_a_loader(
    make_bridge: MakeBridge, stdio_args: StdioArgs, variable: str
) -> None:
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER)
    env_json = json.dumps({variable: "${env:WEATHER_API_KEY}"})
    refused = error(add_weather(bridge, stdio_args, env_json=env_json), "invalid_argument")
    assert refused.message.startswith(f"env_json cannot set '{variable}'")


@pytest.mark.parametrize("env_json", ['["WEATHER_API_KEY"]', '{"WEATHER_API_KEY": 7}', "{not json"])
def test_env_json_that_is_no_object_of_references_is_invalid_argument(
    make_bridge: MakeBridge, stdio_args: StdioArgs, env_json: str
) -> None:
    error(add_weather(make_bridge(secret_env_allow=ALLOW_WEATHER), stdio_args, env_json=env_json), "invalid_argument")


def test_env_json_belongs_to_a_command_not_a_url(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER)
    refused = error(bridge.add_server("weather", url="https://weather.example.com/mcp", env_json=REFERENCE), "invalid_argument")
    assert "env_json" in refused.message and "headers_json" in refused.message


def test_the_key_is_read_at_each_start_so_a_rotated_key_reaches_the_next_child(
    make_bridge: MakeBridge, stdio_args: StdioArgs, monkeypatch: pytest.MonkeyPatch
) -> None:
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER, session_idle_s=0)  # a new child for every call
    ok(add_weather(bridge, stdio_args))
    assert hashlib.sha256(KEY.encode()).hexdigest() in ok(forecast(bridge)).text
    monkeypatch.setenv("WEATHER_API_KEY", "rotated-key")
    assert hashlib.sha256(b"rotated-key").hexdigest() in ok(forecast(bridge)).text


def test_a_key_unset_by_the_time_the_server_starts_is_refused_naming_only_the_variable(
    make_bridge: MakeBridge, stdio_args: StdioArgs, monkeypatch: pytest.MonkeyPatch
) -> None:
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER)
    ok(add_weather(bridge, stdio_args))
    monkeypatch.delenv("WEATHER_API_KEY")
    refused = error(forecast(bridge), "invalid_argument")
    assert refused.message == "${env:WEATHER_API_KEY} is not set in the bridge's environment."


def test_a_server_binding_never_lets_a_header_send_the_key(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(secret_env_allow=ALLOW_WEATHER)
    headers = json.dumps({"Authorization": "Bearer ${env:WEATHER_API_KEY}"})
    refused = error(bridge.add_server("weather", url="https://weather.example.com/mcp", headers_json=headers), "invalid_argument")
    assert "not to https://weather.example.com:443" in refused.message and KEY not in refused.message


@pytest.mark.parametrize("entry", ["WEATHER_API_KEY@server:", "WEATHER_API_KEY@server:bad name", "WEATHER_API_KEY@server:a/b"])
def test_a_malformed_server_binding_stops_the_settings(entry: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="names no valid server"):
        Settings(workspace=tmp_path, secret_env_allow=(entry,))
