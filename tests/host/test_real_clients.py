"""Clients nobody here wrote, from the npm registry (installed by `scripts/test.sh` in tests/node):

- the MCP Inspector CLI (`@modelcontextprotocol/inspector`, which needs Node >= 22.19: the npm package
  `node@22` brings one, since the machine's node may be older) lists and calls the bridge's tools
  over stdio and HTTP, in the handshake era and the 2026-07-28 era, and its exit codes are asserted:
  0 for a result, 3 when authentication is required, 5 for a tool result with `isError`.

The conformance suite (`@modelcontextprotocol/conformance`) runs in `test_conformance.py`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from bridge_proc import (
    BRIDGE,
    FOUR_TOOLS,
    NODE_MODULES,
    HttpBridge,
    host_env,
    http_bridge,
    workdirs,
)

NODE22 = NODE_MODULES / "node/bin/node"
INSPECTOR = NODE_MODULES / "@modelcontextprotocol/inspector/clients/launcher/build/index.js"
TOKEN = "inspector-token-5d0c8e71a2b94f36"
INSPECTOR_OK, INSPECTOR_AUTH_REQUIRED, INSPECTOR_TOOL_ERROR = 0, 3, 5


@pytest.fixture(scope="module")
def dirs() -> Iterator[dict[str, str]]:
    with workdirs() as made:
        for tool in (NODE22, INSPECTOR):
            assert tool.is_file(), f"{tool} is missing: run scripts/test.sh, which installs tests/node"
        yield made


def node_env(dirs: dict[str, str]) -> dict[str, str]:
    """A HOME of its own, so the Inspector's catalog and OAuth state never touch the real one."""
    return {"PATH": "/usr/bin:/bin", "HOME": dirs["MCP_STATE_DIR"] + "-node-home"}


def inspector(dirs: dict[str, str], era: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(NODE22), str(INSPECTOR), "--cli", "--format", "json", "--protocol-era", era, *args]
    return subprocess.run(command, env=node_env(dirs), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def stdio_target(dirs: dict[str, str]) -> list[str]:
    return ["-e", f"MCP_WORKSPACE={dirs['MCP_WORKSPACE']}", "-e", f"MCP_STATE_DIR={dirs['MCP_STATE_DIR']}", BRIDGE]


def listed(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == INSPECTOR_OK, done.stderr
    return [tool["name"] for tool in json.loads(done.stdout)["result"]["tools"]]


def called(done: subprocess.CompletedProcess[str], expected_code: int) -> dict[str, object]:
    assert done.returncode == expected_code, (done.stdout, done.stderr)
    return json.loads(done.stdout)["result"]


ERAS = ["legacy", "modern"]


@pytest.mark.parametrize("era", ERAS)
def test_inspector_lists_the_four_tools_over_stdio_with_no_portability_error(dirs: dict[str, str], era: str) -> None:
    done = inspector(dirs, era, "--strict", "--method", "tools/list", *stdio_target(dirs))
    assert listed(done) == FOUR_TOOLS  # --strict exits 6 on an error-severity schema problem


@pytest.mark.parametrize("era", ERAS)
def test_inspector_calls_a_tool_over_stdio(dirs: dict[str, str], era: str) -> None:
    done = inspector(dirs, era, "--method", "tools/call", "--tool-name", "mcp_list_tools", *stdio_target(dirs))
    result = called(done, INSPECTOR_OK)
    assert result["isError"] is False
    assert result["structuredContent"] == {"ok": True, "servers": []}


@pytest.mark.parametrize("era", ERAS)
def test_inspector_exits_5_on_a_tool_error_over_stdio(dirs: dict[str, str], era: str) -> None:
    arguments = json.dumps({"server": "nope", "tool_name": "x"})
    done = inspector(
        dirs, era, "--method", "tools/call", "--tool-name", "mcp_call_tool", "--tool-args-json", arguments, *stdio_target(dirs)
    )
    result = called(done, INSPECTOR_TOOL_ERROR)
    assert result["structuredContent"]["code"] == "unknown_server"  # type: ignore[index]


@pytest.fixture(scope="module")
def guarded(dirs: dict[str, str]) -> Iterator[HttpBridge]:
    with http_bridge(host_env(dirs, MCP_AUTH_TOKEN=TOKEN)) as running:
        yield running


def http_target(bridge: HttpBridge) -> list[str]:
    return ["--transport", "http", "--header", f"Authorization: Bearer {TOKEN}", "--server-url", bridge.url]


@pytest.mark.parametrize("era", ERAS)
def test_inspector_lists_the_four_tools_over_http_with_the_bearer_token(
    dirs: dict[str, str], guarded: HttpBridge, era: str
) -> None:
    done = inspector(dirs, era, "--strict", "--method", "tools/list", *http_target(guarded))
    assert listed(done) == FOUR_TOOLS


@pytest.mark.parametrize("era", ERAS)
def test_inspector_calls_a_tool_over_http(dirs: dict[str, str], guarded: HttpBridge, era: str) -> None:
    done = inspector(dirs, era, "--method", "tools/call", "--tool-name", "mcp_list_tools", *http_target(guarded))
    assert called(done, INSPECTOR_OK)["isError"] is False


def test_inspector_without_the_token_is_turned_away(dirs: dict[str, str], guarded: HttpBridge) -> None:
    done = inspector(dirs, "legacy", "--stored-auth-only", "--method", "tools/list", "--server-url", guarded.url)
    assert done.returncode == INSPECTOR_AUTH_REQUIRED
    assert "auth_required" in done.stderr and "mcp_list_tools" not in done.stdout
