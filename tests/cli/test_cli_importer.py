"""`mcp-bridge import PATH`: host configs into the dynamic registry, through the tools' own checks."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import CliDirs, RunCli
from helpers import fixture_path

from bridge.cli.importer import strip_jsonc

ENV_SECRET = "env-value-that-must-not-be-stored"
HEADER_SECRET = "Bearer header-value-never-printed"


def host_config(cli_dirs: CliDirs, servers: dict[str, Any], key: str = "mcpServers", name: str = "host.json") -> str:
    path = cli_dirs.base / name
    path.write_text(json.dumps({key: servers}))
    return str(path)


def plan(ran: Any) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in ran.json()["entries"]}


@pytest.fixture
def on_path(cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable `fake-mcp-server` found only through PATH."""
    program = cli_dirs.base / "bin" / "fake-mcp-server"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{program.parent}{os.pathsep}{os.environ['PATH']}")
    return program


def test_claude_desktop_config_is_imported_with_absolute_commands(cli: RunCli, cli_dirs: CliDirs, on_path: Path) -> None:
    path = host_config(
        cli_dirs,
        {
            "local": {"command": "fake-mcp-server", "args": ["--root", "."]},
            "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": HEADER_SECRET}},
            "cursor-style": {"url": "https://cursor.example/mcp"},
        },
    )
    ran = cli("import", path)
    assert ran.code == 0, ran.out + ran.err
    entries = cli_dirs.registry_entries()
    assert entries["local"]["command"] == str(on_path)
    assert entries["local"]["args"] == ["--root", "."]
    assert entries["docs"] == {**entries["docs"], "transport": "http", "headers": {"Authorization": HEADER_SECRET}}
    assert entries["cursor-style"]["url"] == "https://cursor.example/mcp"
    rows = [line.split() for line in ran.out.splitlines()[1:]]
    assert [row[:3] for row in rows] == [["added", "local", "stdio:"], ["added", "docs", "http:"], ["added", "cursor-style", "http:"]]
    assert rows[1][3:] == ["https://example.com/mcp", "(headers:", "Authorization)"]
    assert HEADER_SECRET not in ran.out + ran.err


def test_env_covered_by_child_env_prefixes_is_imported_without_its_values(
    cli: RunCli, cli_dirs: CliDirs, on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_CHILD_ENV_PREFIXES", "LITE_")
    path = host_config(cli_dirs, {"lite": {"command": "fake-mcp-server", "env": {"LITE_MODE": ENV_SECRET}}})
    ran = cli("import", path, "--json")
    assert ran.code == 0
    assert plan(ran)["lite"]["notes"] == [
        "env LITE_MODE: the file's values are dropped; the child gets the bridge's own (MCP_CHILD_ENV_PREFIXES)"
    ]
    assert "env" not in cli_dirs.registry_entries()["lite"] or not cli_dirs.registry_entries()["lite"]["env"]
    assert ENV_SECRET not in cli_dirs.registry.read_text()


@pytest.mark.parametrize(
    ("prefixes", "env", "reason"),
    [
        ("", {"API_MODE": "x"}, "needs env API_MODE, which a dynamic server cannot carry; add the server to "
         "the developer's MCP_SERVERS or allow the prefix via MCP_CHILD_ENV_PREFIXES"),
        ("LITE_", {"LITE_MODE": "x", "OTHER": "y"}, "needs env OTHER, which a dynamic server cannot carry; add the "
         "server to the developer's MCP_SERVERS or allow the prefix via MCP_CHILD_ENV_PREFIXES"),
        ("LITE_", {"LITE_API_KEY": "x"}, "needs env LITE_API_KEY, which a dynamic server cannot carry; add the server "
         "to the developer's MCP_SERVERS (credential-looking names pass no prefix)"),
    ],
    ids=["no-prefix", "one-uncovered", "credential-under-prefix"],
)
def test_env_a_dynamic_server_cannot_carry_is_not_imported(
    cli: RunCli, cli_dirs: CliDirs, on_path: Path, monkeypatch: pytest.MonkeyPatch, prefixes: str, env: dict[str, str], reason: str
) -> None:
    monkeypatch.setenv("MCP_CHILD_ENV_PREFIXES", prefixes)
    path = host_config(cli_dirs, {"svc": {"command": "fake-mcp-server", "env": env}, "ok": {"command": "fake-mcp-server"}})
    ran = cli("import", path, "--json")
    assert ran.code == 1
    assert plan(ran)["svc"] == {**plan(ran)["svc"], "action": "refuse", "reason": reason}
    assert plan(ran)["ok"]["action"] == "add"
    assert set(cli_dirs.registry_entries()) == {"ok"}


@pytest.mark.parametrize(
    ("name", "entry", "reason"),
    [
        ("old", {"type": "sse", "url": "https://x.example/sse"}, "SSE-only server (type: sse)"),
        ("bad.name", {"command": sys.executable}, "name must match ^[A-Za-z0-9_-]{1,64}$"),
        ("gone", {"command": "no-such-mcp-program"}, "command 'no-such-mcp-program' is not on PATH"),
        ("rel", {"command": "./bin/server"}, "command './bin/server' is a relative path"),
        ("ws", {"type": "ws", "url": "wss://x.example"}, "type 'ws' is not a transport the bridge speaks"),
        ("empty", {"args": ["x"]}, "has neither a command (stdio) nor a url (http)"),
        ("envfile", {"command": sys.executable, "envFile": "${workspaceFolder}/.env"}, "reads env from envFile"),
        ("ftp", {"url": "ftp://x.example"}, "url must be an http:// or https:// URL with a host"),
        ("outside", {"command": sys.executable, "cwd": "/"}, "cwd must lie inside the workspace"),
        ("args", {"command": sys.executable, "args": "-m x"}, "args_json must be a JSON array of strings"),
    ],
    ids=["sse", "name", "not-on-path", "relative", "unknown-type", "no-command-no-url", "env-file", "url", "cwd", "args"],
)
def test_what_cannot_be_imported_is_listed_with_the_reason(
    cli: RunCli, cli_dirs: CliDirs, name: str, entry: dict[str, Any], reason: str
) -> None:
    ran = cli("import", host_config(cli_dirs, {name: entry}))
    assert ran.code == 1
    _, _, shown_name, shown_reason = ran.out.splitlines()[1].split(None, 3)
    assert shown_name == name and reason in shown_reason
    assert cli_dirs.registry_entries() == {}


def test_vscode_jsonc_with_comments_trailing_commas_and_placeholders(cli: RunCli, cli_dirs: CliDirs, on_path: Path) -> None:
    path = cli_dirs.base / "mcp.json"
    path.write_text(
        """{
  // VS Code's mcp.json
  "inputs": [{"type": "promptString", "id": "token", "password": true},],
  "servers": {
    /* needs a prompt */
    "gh": {"type": "http", "url": "https://api.example/mcp/", "headers": {"Authorization": "Bearer ${input:token}"}},
    "local": {"type": "stdio", "command": "fake-mcp-server", "args": ["// kept", "/* kept */", "a,]"],},
  },
}"""
    )
    ran = cli("import", str(path), "--json")
    assert ran.json()["key"] == "servers"
    assert plan(ran)["gh"]["reason"] == "uses ${...} placeholders, which import does not expand (in header Authorization)"
    assert "${input:token}" not in ran.out
    assert cli_dirs.registry_entries()["local"]["args"] == ["// kept", "/* kept */", "a,]"]


def test_jsonc_stripping_leaves_strings_alone() -> None:
    text = '{"a": "x // y /* z */", /* c */ "b": [1, 2,], // d\n "c": "\\" ,}",}'
    assert json.loads(strip_jsonc(text)) == {"a": "x // y /* z */", "b": [1, 2], "c": '" ,}'}


def test_vscode_settings_mcp_servers_are_found(cli: RunCli, cli_dirs: CliDirs) -> None:
    path = cli_dirs.base / "settings.json"
    path.write_text(json.dumps({"editor.fontSize": 12, "mcp": {"servers": {"docs": {"type": "http", "url": "https://x.example/mcp"}}}}))
    ran = cli("import", str(path), "--json")
    assert (ran.code, ran.json()["key"]) == (0, "mcp.servers")


def test_dry_run_writes_nothing(cli: RunCli, cli_dirs: CliDirs, on_path: Path) -> None:
    path = host_config(cli_dirs, {"local": {"command": "fake-mcp-server"}, "docs": {"url": "https://x.example/mcp"}})
    ran = cli("import", path, "--dry-run")
    assert ran.code == 0
    assert not cli_dirs.registry.exists()  # not even the empty file a bridge creates at start
    assert ran.out.splitlines()[1].split() == ["would", "add", "local", "stdio:", str(on_path)]
    assert ran.out.endswith("dry run: nothing was written\n")
    cli("servers", "add", "other", "--url", "https://other.example/mcp")
    before = cli_dirs.registry.read_bytes()
    assert cli("import", path, "--dry-run").code == 0
    assert cli_dirs.registry.read_bytes() == before


def test_existing_names_are_skipped_unless_replace(cli: RunCli, cli_dirs: CliDirs) -> None:
    cli("servers", "add", "docs", "--url", "https://old.example/mcp")
    path = host_config(cli_dirs, {"docs": {"url": "https://new.example/mcp"}})
    skipped = cli("import", path, "--json")
    assert skipped.code == 0
    assert plan(skipped)["docs"]["reason"] == "already registered (dynamic); --replace overwrites it"
    assert cli_dirs.registry_entries()["docs"]["url"] == "https://old.example/mcp"
    replaced = cli("import", path, "--replace")
    assert replaced.out.splitlines()[1].split() == ["replaced", "docs", "http:", "https://new.example/mcp"]
    assert cli_dirs.registry_entries()["docs"]["url"] == "https://new.example/mcp"


def test_replacing_a_provisioned_name_notes_the_shadow(cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_dirs.provision({"dev": {"transport": "http", "url": "https://dev.example/mcp"}})
    ran = cli("import", host_config(cli_dirs, {"dev": {"url": "https://x.example/mcp"}}), "--replace", "--json")
    assert plan(ran)["dev"]["notes"] == ["shadows the developer's config entry of that name until removed"]
    assert cli("servers", "show", "dev", "--json").json()["origin"] == "dynamic (shadows config)"


def test_a_disabled_transport_is_not_imported(cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ALLOWED_TRANSPORTS", "http")
    ran = cli("import", host_config(cli_dirs, {"echo": {"command": sys.executable, "args": [fixture_path("echo")]}}), "--json")
    assert plan(ran)["echo"]["reason"] == "stdio servers are disabled here (MCP_ALLOWED_TRANSPORTS)."


def test_a_failed_write_stops_the_import_with_its_exit_code(cli: RunCli, cli_dirs: CliDirs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ALLOW_DYNAMIC", "false")
    ran = cli("import", host_config(cli_dirs, {"a": {"url": "https://a.example/mcp"}, "b": {"url": "https://b.example/mcp"}}))
    assert ran.code == 4 and "MCP_ALLOW_DYNAMIC=false" in ran.err
    assert [line.split()[:3] for line in ran.out.splitlines()[1:]] == [["not", "added", "a"], ["not", "added", "b"]]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{not json", "is not JSON"),
        ('{"servers": []}', "has no mcpServers or servers object"),
        ("[]", "has no mcpServers or servers object"),
    ],
    ids=["missing", "not-json", "servers-not-object", "not-an-object"],
)
def test_an_unusable_file_exits_2(cli: RunCli, cli_dirs: CliDirs, content: str | None, message: str) -> None:
    path = cli_dirs.base / "host.json"
    if content is not None:
        path.write_text(content)
    ran = cli("import", str(path))
    assert ran.code == 2 and message in ran.err


def test_an_entry_marked_disabled_is_skipped_and_said_so(cli: RunCli, cli_dirs: CliDirs) -> None:
    servers = {"off": {"url": "https://off.example/mcp", "disabled": True}, "on": {"url": "https://on.example/mcp", "disabled": False}}
    ran = cli("import", host_config(cli_dirs, servers), "--json")
    entries = plan(ran)
    assert entries["off"]["action"] == "skip" and "disabled" in entries["off"]["reason"]
    assert entries["on"]["action"] == "add"
    assert list(cli_dirs.registry_entries()) == ["on"]
