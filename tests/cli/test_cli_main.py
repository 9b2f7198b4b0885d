"""The command tree: help on every command, exit codes scripts can rely on, and `serve` as the default."""

from __future__ import annotations

import json
import os
import typing

import pytest
from bridge_proc import FOUR_TOOLS, host_env, http_bridge, http_peer, stdio_bridge
from cli_support import BRIDGE, CliDirs, RunCli, run_script

from bridge.cli.errors import EXIT_FOR_CODE, Exit
from bridge.errors import ErrorCode

COMMANDS = [
    ["servers"],
    ["servers", "list"],
    ["servers", "show"],
    ["servers", "add"],
    ["servers", "remove"],
    ["import"],
    ["probe"],
    ["config"],
    ["config", "claude-desktop"],
    ["audit"],
]


def test_top_level_help_lists_every_command_and_the_exit_codes(cli: RunCli) -> None:
    ran = cli("--help")
    assert ran.code == 0
    for command in ("serve", "servers", "import", "probe", "config", "audit"):
        assert f"\n    {command} " in ran.out
    assert "exit codes:" in ran.out and "6  the downstream server failed" in ran.out


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_ending_with_the_exit_codes(cli: RunCli, command: list[str]) -> None:
    ran = cli(*command, "--help")
    assert ran.code == 0
    assert f"usage: mcp-bridge {' '.join(command)}" in ran.out
    assert ran.out.rstrip().endswith("6  the downstream server failed (spawn, exit, connect, HTTP, protocol, timeout)")


@pytest.mark.parametrize(
    "argv", [["sevrers"], ["servers"], ["servers", "drop", "x"], ["probe"], ["audit", "--since", "yesterday"]], ids=" ".join
)
def test_usage_errors_exit_2_with_a_message(cli: RunCli, argv: list[str]) -> None:
    ran = cli(*argv)
    assert ran.code == Exit.USAGE == 2
    assert "error:" in ran.err and ran.out == ""


def test_every_bridge_error_code_has_an_exit_code() -> None:
    assert set(EXIT_FOR_CODE) == set(typing.get_args(ErrorCode))


def test_a_bad_setting_exits_2_naming_the_setting(cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TIMEOUT", "0")
    ran = cli("servers", "list")
    assert ran.code == 2
    assert "MCP_TIMEOUT" in ran.err


def test_a_refused_setting_is_quoted_as_given(cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TIMEOUT", "5s")
    ran = cli("servers", "list")
    assert ran.code == 2
    assert "MCP_TIMEOUT='5s'" in ran.err and "valid number" in ran.err


@pytest.mark.parametrize(
    ("argv", "meant"),
    [(["servrs", "list"], "'servers'"), (["config", "claude-dekstop"], "'claude-desktop'"), (["auth", "logn"], "'login'")],
    ids=" ".join,
)
def test_a_misspelt_command_gets_did_you_mean(cli: RunCli, argv: list[str], meant: str) -> None:
    ran = cli(*argv)
    assert ran.code == Exit.USAGE
    assert f"did you mean {meant}?" in ran.err


def test_a_misspelt_server_to_remove_gets_did_you_mean(cli: RunCli) -> None:
    assert cli("servers", "add", "everything", "--url", "https://example.com/mcp").code == 0
    ran = cli("servers", "remove", "evrything")
    assert ran.code == Exit.NOT_FOUND
    assert "Did you mean: everything?" in ran.err
    assert cli("servers", "remove", "everything").code == 0  # the twin: the right name is removed


def test_the_installed_script_exits_with_the_command_s_code(cli_dirs: CliDirs) -> None:
    env = {**host_env({"MCP_WORKSPACE": str(cli_dirs.workspace), "MCP_STATE_DIR": str(cli_dirs.state)})}
    missing = run_script("servers", "show", "nope", env=env)
    assert missing.code == Exit.NOT_FOUND
    assert missing.err.startswith("mcp-bridge: error: No server named 'nope' is registered.")
    listed = run_script("servers", "list", "--json", env=env)
    assert (listed.code, listed.out.strip()) == (0, "[]")


def test_no_command_serves_stdio_as_before(cli_dirs: CliDirs) -> None:
    env = host_env({"MCP_WORKSPACE": str(cli_dirs.workspace), "MCP_STATE_DIR": str(cli_dirs.state)})
    with stdio_bridge(env) as peer:
        peer.handshake()
        assert [tool["name"] for tool in peer.result("tools/list")["tools"]] == FOUR_TOOLS


@pytest.mark.parametrize("spelt_out", [False, True], ids=["options-only", "serve"])
def test_transport_options_serve_http_with_or_without_serve(cli_dirs: CliDirs, spelt_out: bool) -> None:
    env = host_env({"MCP_WORKSPACE": str(cli_dirs.workspace), "MCP_STATE_DIR": str(cli_dirs.state)})
    command = [BRIDGE, *(["serve"] if spelt_out else []), "--transport", "http", "--port", "0"]
    with http_bridge(env, command=command) as bridge, http_peer(bridge.url) as peer:
        peer.handshake()
        assert [tool["name"] for tool in peer.request("tools/list")["tools"]] == FOUR_TOOLS


def test_serve_help_is_the_server_s_own(cli_dirs: CliDirs) -> None:
    ran = run_script("serve", "--help", env={"PATH": os.environ["PATH"]})
    assert ran.code == 0
    assert "--transport {stdio,http}" in ran.out and "--port PORT" in ran.out


@pytest.mark.parametrize("argv", [["--transport", "htp"], ["serve", "--transport", "stdo"]], ids=" ".join)
def test_a_misspelt_transport_gets_did_you_mean(argv: list[str]) -> None:
    ran = run_script(*argv, env={"PATH": os.environ["PATH"]})
    assert ran.code == 2
    meant = "'http'" if argv[-1] == "htp" else "'stdio'"
    assert f"did you mean {meant}?" in ran.err


@pytest.mark.parametrize("plant", ["fifo", "symlink-to-dev-zero"])
def test_a_plant_at_the_old_registry_path_neither_hangs_nor_crashes_any_later_command(cli_dirs: CliDirs, plant: str) -> None:
    """A child may write `<workspace>/tool_mcp/servers.json`; every start reads it until the canonical
    file exists, and the canonical file is not created over a plant, so each command meets it."""
    legacy = cli_dirs.workspace / "tool_mcp" / "servers.json"
    legacy.parent.mkdir()
    if plant == "fifo":
        os.mkfifo(legacy)
    else:
        legacy.symlink_to("/dev/zero")
    env = host_env({"MCP_WORKSPACE": str(cli_dirs.workspace), "MCP_STATE_DIR": str(cli_dirs.state)})
    for _ in range(2):  # the first command and a later one: neither adopts nor blocks on it
        listed = run_script("servers", "list", env=env)
        assert listed.code == 0, listed.err
        assert "cannot be read" in listed.err and ("not a regular file" in listed.err or "safely" in listed.err)
    assert not cli_dirs.registry.exists()


def test_a_regular_file_at_the_old_registry_path_is_adopted_by_the_first_command(cli_dirs: CliDirs) -> None:
    """Positive twin of the plants: a real legacy registry is read (once) and listed."""
    legacy = cli_dirs.workspace / "tool_mcp" / "servers.json"
    legacy.parent.mkdir()
    legacy.write_text(json.dumps({"servers": {"old": {"transport": "http", "url": "https://example.com/mcp"}}}))
    env = host_env({"MCP_WORKSPACE": str(cli_dirs.workspace), "MCP_STATE_DIR": str(cli_dirs.state)})
    listed = run_script("servers", "list", "--json", env=env)
    assert [server["name"] for server in json.loads(listed.out)] == ["old"]
    assert "old" in cli_dirs.registry_entries()
