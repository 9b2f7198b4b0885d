"""`mcp-bridge probe NAME` against real servers: server-everything, and a fixture whose tools each
break one host rule beside tools that break none."""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

import pytest
from bridge_proc import EVERYTHING
from cli_support import CliDirs, RunCli
from helpers import fixture_path

from bridge.cli.probe import TASK_ONLY
from bridge.downstream.pool import TASKS_UNAVAILABLE
from bridge.settings import Settings
from bridge.tools import Bridge

HOSTILE_FINDINGS = {  # tool: (chatgpt status, claude status, a phrase of each drop reason)
    "claude_ready": ("warn", "ok", []),
    "enum_default_items": ("warn", "ok", []),
    "chatgpt_complete": ("ok", "DROP", ["outputSchema declares http://json-schema.org/draft-07/schema#"]),
    "dotted.name": ("warn", "DROP", ["name does not match ^[a-zA-Z0-9_-]{1,64}$"]),
    "oversized": ("warn", "DROP", ["bytes serialized, over Claude's 16,384"]),
    "task_only": ("DROP", "DROP", [TASK_ONLY]),
    "tuple_items": ("DROP", "DROP", ["uses tuple-form items", "is not a valid 2020-12 schema at $.properties.pair.items"]),
}


def status(verdict: dict[str, Any]) -> str:
    return "DROP" if verdict["drops"] else "warn" if verdict["warnings"] else "ok"


def by_tool(report: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    return {tool["name"]: tool["hosts"] for tool in report["tools"]}


def add_fixture(cli: RunCli, name: str, *args: str) -> None:
    assert cli("servers", "add", name, "--", sys.executable, fixture_path("host_hostile"), *args).code == 0


def test_server_everything_imported_from_claude_desktop_config(cli: RunCli, cli_dirs: CliDirs) -> None:
    host_config = cli_dirs.base / "claude_desktop_config.json"
    host_config.write_text(json.dumps({"mcpServers": {"everything": {"command": "node", "args": [str(EVERYTHING)]}}}))
    assert cli("import", str(host_config)).code == 0
    assert cli_dirs.registry_entries()["everything"]["command"] == shutil.which("node")

    ran = cli("probe", "everything", "--json")
    assert ran.code == 0  # every tool works through the bridge: the host columns inform
    report = ran.json()
    uses = {tool["name"]: tool["bridge"]["use"] for tool in report["tools"]}
    assert uses.pop("simulate-research-query") == "task"  # task-only: mcp_call_tool runs it as a task
    assert set(uses.values()) == {"call"} and uses["get-structured-content"] == "call"
    tools = by_tool(report)
    assert tools["simulate-research-query"]["chatgpt"]["drops"] == [TASK_ONLY]
    assert tools["simulate-research-query"]["claude"]["drops"] == [TASK_ONLY]
    assert tools["get-structured-content"]["claude"]["drops"] == [
        "outputSchema declares http://json-schema.org/draft-07/schema#; Claude Code accepts 2020-12 only"
    ]
    dropped = {name for name, hosts in tools.items() if any(verdict["drops"] for verdict in hosts.values())}
    assert dropped == {"simulate-research-query", "get-structured-content"}
    assert tools["echo"]["claude"]["warnings"] == [
        "inputSchema declares http://json-schema.org/draft-07/schema#; Claude reads schemas as 2020-12"
    ]
    assert cli("probe", "everything", "--host", "claude").code == 1  # connecting Claude to it directly


def test_one_row_per_tool_mcp_list_tools_lists(cli: RunCli, cli_dirs: CliDirs) -> None:
    assert cli("servers", "add", "everything", "--", "node", str(EVERYTHING)).code == 0
    bridge = Bridge(Settings(), cli_dirs.provisioned())
    try:
        catalog = bridge.list_tools("everything").data
    finally:
        bridge.close()
    ran = cli("probe", "everything")
    header, *rows = ran.out.split("\n\n", 1)[0].splitlines()
    assert header.split() == ["TOOL", "BRIDGE", "CHATGPT", "CLAUDE"]
    assert [row.split()[0] for row in rows] == [tool.name for tool in catalog.tools]
    assert ran.out.splitlines()[-2:] == [
        "everything: 14 tools; mcp_call_tool calls 13, runs 1 as a task, refuses 0; "  # get-roots-list: the bridge answers roots
        "connected directly, chatgpt would drop 1, claude would drop 2",
        "(BRIDGE: what mcp_call_tool does, any result over MCP_MAX_CHARS paged; "
        "CHATGPT, CLAUDE: a host connected to the server directly, not through the bridge)",
    ]


def test_each_broken_rule_is_found_and_well_formed_tools_pass(cli: RunCli) -> None:
    add_fixture(cli, "hostile")
    ran = cli("probe", "hostile", "--json")
    assert ran.code == 1  # mcp_call_tool cannot run its task-only tool
    uses = {tool["name"]: tool["bridge"] for tool in ran.json()["tools"]}
    assert uses.pop("task_only") == {"use": "refused", "reason": TASKS_UNAVAILABLE}
    assert {bridge["use"] for bridge in uses.values()} == {"call"}  # whatever the hosts would drop directly
    tools = by_tool(ran.json())
    assert set(tools) == set(HOSTILE_FINDINGS)
    for name, (chatgpt, claude, phrases) in HOSTILE_FINDINGS.items():
        assert (status(tools[name]["chatgpt"]), status(tools[name]["claude"])) == (chatgpt, claude), name
        drops = " | ".join(tools[name]["chatgpt"]["drops"] + tools[name]["claude"]["drops"])
        assert all(phrase in drops for phrase in phrases), (name, drops)


def test_the_text_report_gives_each_reason_once_with_its_tools(cli: RunCli) -> None:
    add_fixture(cli, "hostile")
    out = cli("probe", "hostile", "--host", "claude").out
    assert "\nclaude DROP: " + TASK_ONLY + "\n  task_only\n" in out
    assert "\nbridge refused: " + TASKS_UNAVAILABLE + "\n  task_only\n" in out
    assert out.splitlines()[0].split() == ["TOOL", "BRIDGE", "CLAUDE"]
    assert not [line for line in out.splitlines() if line.startswith("chatgpt ")]


def test_a_server_no_host_would_drop_exits_0_and_strict_fails_on_warnings(cli: RunCli) -> None:
    add_fixture(cli, "good", "good")
    assert cli("probe", "good").code == 0
    strict = cli("probe", "good", "--strict", "--json")
    assert strict.code == 1 and strict.json()["failed"] is True
    assert cli("probe", "good", "--strict", "--host", "claude").code == 0


def test_probing_an_unknown_server_exits_3(cli: RunCli) -> None:
    ran = cli("probe", "nope")
    assert ran.code == 3 and "[unknown_server]" in ran.err


def test_a_server_that_dies_at_start_exits_6_with_its_stderr(cli: RunCli) -> None:
    cli("servers", "add", "crash", "--", sys.executable, fixture_path("crash_at_start"))
    ran = cli("probe", "crash")
    assert ran.code == 6
    assert "exited with code 3" in ran.err and "[child_exited]" in ran.err
    assert "  stderr: fatal: fixture crashed on purpose\n" in ran.err
    assert ran.out == ""


def test_timeout_option_bounds_a_server_that_never_answers(cli: RunCli) -> None:
    cli("servers", "add", "hang", "--", sys.executable, fixture_path("hang"), "--exit-on-eof")
    ran = cli("probe", "hang", "--timeout", "1")
    assert ran.code == 6 and "[timeout]" in ran.err


@pytest.mark.parametrize("value", ["0", "-1", "99999"])
def test_an_out_of_bounds_timeout_is_a_usage_error(cli: RunCli, value: str) -> None:
    ran = cli("probe", "x", "--timeout", value)
    assert ran.code == 2 and "MCP_TIMEOUT" in ran.err
