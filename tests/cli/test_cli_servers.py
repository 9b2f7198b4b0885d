"""`mcp-bridge servers ...`: the registry through the tools' own code, with secrets never printed."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import CliDirs, RunCli
from helpers import fixture_path

from bridge.settings import Settings
from bridge.tools import Bridge

SECRET = "Bearer s3cr3t-cli-test-value"


@pytest.fixture
def tool_bridge(cli_dirs: CliDirs) -> Iterator[Bridge]:
    """The bridge the four tools run on, over the same env as the CLI."""
    bridge = Bridge(Settings(), cli_dirs.provisioned())
    try:
        yield bridge
    finally:
        bridge.close()


@pytest.fixture
def provisioned(cli_dirs: CliDirs) -> str:
    """A developer-provisioned stdio server carrying an env secret."""
    entry = {"transport": "stdio", "command": sys.executable, "args": [fixture_path("echo")], "env": {"DEV_VALUE": "hunter2-env"}}
    cli_dirs.provision({"dev": entry})
    return "dev"


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_list_is_empty_at_first(cli: RunCli) -> None:
    assert cli("servers", "list").out == "No servers are registered.\n"
    assert cli("servers", "list", "--json").json() == []


def test_add_http_then_list_and_show_never_print_the_header_value(cli: RunCli, cli_dirs: CliDirs) -> None:
    added = cli("servers", "add", "docs", "--url", "https://example.com/mcp", "--header", f"Authorization: {SECRET}")
    assert (added.code, added.out) == (0, "added docs (http, dynamic): https://example.com/mcp\n")
    assert cli_dirs.registry_entries()["docs"]["headers"] == {"Authorization": SECRET}
    listed = cli("servers", "list", "--json").json()
    assert listed == [{"name": "docs", "transport": "http", "origin": "dynamic", "target": "https://example.com/mcp"}]
    shown = cli("servers", "show", "docs", "--json").json()
    assert shown["headers"] == {"Authorization": "<redacted>"}
    text = cli("servers", "show", "docs")
    assert "  Authorization: <redacted>\n" in text.out
    assert all(SECRET not in output for output in (added.out, added.err, text.out, json.dumps(shown)))


def test_add_stdio_takes_the_command_line_after_a_double_dash(cli: RunCli, cli_dirs: CliDirs) -> None:
    (cli_dirs.workspace / "sub").mkdir()
    ran = cli("servers", "add", "echo", "--cwd", "sub", "--", sys.executable, "-u", fixture_path("echo"), "--cwd", "x")
    assert ran.code == 0, ran.err
    entry = cli_dirs.registry_entries()["echo"]
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-u", fixture_path("echo"), "--cwd", "x"]
    assert entry["cwd"] == str(cli_dirs.workspace / "sub")


def test_add_resolves_a_bare_command_on_path_to_an_absolute_path(
    cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = executable(cli_dirs.base / "bin" / "fake-mcp-server")
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ['PATH']}")
    assert cli("servers", "add", "fake", "--", "fake-mcp-server", "--flag").code == 0
    assert cli_dirs.registry_entries()["fake"]["command"] == str(program)
    missing = cli("servers", "add", "gone", "--", "no-such-mcp-program")
    assert missing.code == 2
    assert missing.err.startswith(f"mcp-bridge: error: command 'no-such-mcp-program' is not on PATH: looked for 'no-such-mcp-program' in {program.parent}, ")


def test_add_makes_a_relative_command_absolute(cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch) -> None:
    program = executable(cli_dirs.base / "bin" / "server")
    monkeypatch.chdir(cli_dirs.base)
    assert cli("servers", "add", "rel", "--", "bin/server").code == 0
    assert cli_dirs.registry_entries()["rel"]["command"] == str(program)


def test_adding_an_existing_name_replaces_it(cli: RunCli) -> None:
    cli("servers", "add", "docs", "--url", "https://one.example/mcp")
    ran = cli("servers", "add", "docs", "--url", "https://two.example/mcp")
    assert ran.out == "replaced docs (http, dynamic): https://two.example/mcp\n"


@pytest.mark.parametrize(
    ("argv", "tool_args"),
    [
        (["bad name!", "--url", "https://x.example"], {"name": "bad name!", "url": "https://x.example"}),
        (["x", "--url", "ftp://x.example"], {"name": "x", "url": "ftp://x.example"}),
        (["x", "--url", "https://x.example", "--header", "Bad Name: v"], {"name": "x", "url": "https://x.example", "headers_json": '{"Bad Name": "v"}'}),
        (["x", "--cwd", "/", "--", sys.executable], {"name": "x", "command": sys.executable, "cwd": "/"}),
        (["x", "--", "/nonexistent/mcp-server"], {"name": "x", "command": "/nonexistent/mcp-server"}),
        (["x", "--url", "https://x.example", "--", sys.executable], {"name": "x", "url": "https://x.example", "command": sys.executable}),
        (["x"], {"name": "x"}),
    ],
    ids=["name", "url-scheme", "header-name", "cwd-outside", "command-missing", "url-and-command", "neither"],
)
def test_add_refuses_exactly_what_mcp_add_server_refuses(
    cli: RunCli, cli_dirs: CliDirs, tool_bridge: Bridge, argv: list[str], tool_args: dict[str, str]
) -> None:
    refused = tool_bridge.add_server(**tool_args)
    assert refused.is_error
    ran = cli("servers", "add", *argv)
    assert ran.code == 2
    assert ran.err == f"mcp-bridge: error: {refused.data.message} [invalid_argument]\n"
    assert not cli_dirs.registry_entries()


def test_a_bad_header_value_is_refused_without_echoing_it(cli: RunCli) -> None:
    ran = cli("servers", "add", "x", "--url", "https://x.example", "--header", "X-Key: s3cr3t\x01")
    assert ran.code == 2
    assert "'X-Key'" in ran.err and "s3cr3t" not in ran.err


def test_show_unknown_exits_3_with_close_matches(cli: RunCli) -> None:
    cli("servers", "add", "everything", "--url", "https://x.example/mcp")
    ran = cli("servers", "show", "everythin")
    assert ran.code == 3
    assert "Did you mean: everything?" in ran.err


def test_remove_a_dynamic_server(cli: RunCli, cli_dirs: CliDirs) -> None:
    cli("servers", "add", "docs", "--url", "https://x.example/mcp")
    assert cli("servers", "remove", "docs").out == "removed docs\n"
    assert cli_dirs.registry_entries() == {}
    again = cli("servers", "remove", "docs")
    assert again.code == 3 and "[unknown_server]" in again.err


def test_provisioned_server_is_shown_redacted_and_cannot_be_removed(cli: RunCli, provisioned: str) -> None:
    shown = cli("servers", "show", provisioned)
    assert "origin: config\n" in shown.out and "  DEV_VALUE: <redacted>\n" in shown.out
    assert "hunter2" not in shown.out
    removed = cli("servers", "remove", provisioned)
    assert removed.code == 4 and "[forbidden]" in removed.err


def test_a_dynamic_shadow_of_a_provisioned_server_is_removable(cli: RunCli, provisioned: str) -> None:
    cli("servers", "add", provisioned, "--url", "https://x.example/mcp")
    assert cli("servers", "show", provisioned, "--json").json()["origin"] == "dynamic (shadows config)"
    ran = cli("servers", "remove", provisioned)
    assert ran.out == "removed dev; the developer's config entry of that name applies again\n"
    assert cli("servers", "show", provisioned, "--json").json()["origin"] == "config"


def test_adding_is_forbidden_when_dynamic_servers_are_off(cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ALLOW_DYNAMIC", "false")
    ran = cli("servers", "add", "docs", "--url", "https://x.example/mcp")
    assert ran.code == 4 and "MCP_ALLOW_DYNAMIC=false" in ran.err


def test_an_unreadable_registry_is_left_alone_with_exit_5(cli: RunCli, cli_dirs: CliDirs) -> None:
    cli_dirs.registry.parent.mkdir(parents=True)
    cli_dirs.registry.write_text("{not json")
    ran = cli("servers", "add", "docs", "--url", "https://x.example/mcp")
    assert ran.code == 5 and "[registry_error]" in ran.err
    assert cli_dirs.registry.read_text() == "{not json"


def test_an_unreadable_registry_lists_the_config_servers_with_a_warning(
    cli: RunCli, cli_dirs: CliDirs, provisioned: str
) -> None:
    cli_dirs.registry.parent.mkdir(parents=True, exist_ok=True)
    cli_dirs.registry.write_text("{not json")
    ran = cli("servers", "list")
    assert ran.code == 0 and provisioned in ran.out
    assert "warning: The registry of added servers cannot be read" in ran.err


def test_show_gives_the_tool_policy_that_binds_the_name(cli: RunCli, cli_dirs: CliDirs, provisioned: str) -> None:
    entry = {**cli_dirs.provisioned()[provisioned], "tools": {"deny": ["write_*"], "read_only": True}}
    cli_dirs.provision({provisioned: entry})
    cli("servers", "add", provisioned, "--url", "https://x.example/mcp")  # a shadow is bound too
    policy = cli("servers", "show", provisioned, "--json").json()["tool_policy"]
    assert policy == {"allow": [], "deny": ["write_*"], "read_only": True}


def test_what_the_bridge_tells_a_model_to_do_reads_as_a_command_in_the_cli(cli: RunCli) -> None:
    ran = cli("servers", "show", "nope")
    assert ran.code == 3
    assert "Run `mcp-bridge servers list` to see them." in ran.err and "mcp_list_tools" not in ran.err


def test_show_gives_a_stdio_server_s_sandbox_as_a_spawn_would_make_it(cli: RunCli, cli_dirs: CliDirs) -> None:
    assert cli("servers", "add", "echo", "--", sys.executable, fixture_path("echo")).code == 0
    sandbox = cli("servers", "show", "echo", "--json").json()["sandbox"]
    assert sandbox["program"] == sys.executable and sandbox["network"] == "deny" and sandbox["allowed_hosts"] == []
    assert sandbox["home"].endswith("/echo.dynamic") and str(cli_dirs.workspace) in sandbox["writable"]
    assert sandbox["problem"] is None
    assert not Path(sandbox["home"]).exists()  # shown, not created
    text = cli("servers", "show", "echo").out
    assert "sandbox:\n" in text and f"  home: {sandbox['home']}\n" in text


@pytest.mark.skipif(not os.path.exists("/usr/bin/npx"), reason="npx is not installed")
def test_show_gives_a_package_launcher_registry_only_network(cli: RunCli) -> None:
    assert cli("servers", "add", "fs", "--", "/usr/bin/npx", "-y", "@modelcontextprotocol/server-filesystem", ".").code == 0
    sandbox = cli("servers", "show", "fs", "--json").json()["sandbox"]
    assert sandbox["network"] == "registry"
    assert {"registry.npmjs.org", "pypi.org"} <= set(sandbox["allowed_hosts"])
