"""The `claude_desktop_config.json` snippet of the README and of docs/hosts.md, started the way Claude
Desktop starts it: exactly its command, args and env (placeholders filled in), from `/`, with a GUI
app's bare environment, then spoken to as Claude Desktop speaks (`initialize` at 2025-11-25 as
`claude-ai`). Only the state and homes folders are the test's own, so that nothing lands in the
checkout's `work/` or the real home.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from bridge_proc import FOUR_TOOLS, ROOT, StdioPeer, workdirs

# What a macOS GUI app such as Claude Desktop hands a server besides the snippet's own env.
GUI_ENV = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root", "USER": "root", "LOGNAME": "root"}


PAGES = ["README.md", "docs/hosts.md"]


def readme_snippet(page: str = "README.md") -> dict[str, Any]:
    match = re.search(r"^#+ Claude Desktop\n.*?```json\n(.*?)```", (ROOT / page).read_text(), re.S | re.M)
    assert match, f"{page}'s 'Claude Desktop' has no claude_desktop_config.json snippet"
    return json.loads(match.group(1))["mcpServers"]["bridge"]


def filled_in(value: str, workspace: str) -> str:
    """The two placeholders a user replaces: where this checkout is, and their project."""
    return value.replace("/absolute/path/to/mcp-bridge", str(ROOT)).replace("/absolute/path/to/your/project", workspace)


@pytest.fixture
def desktop() -> Iterator[StdioPeer]:
    snippet = readme_snippet()
    with workdirs() as dirs:
        workspace = dirs["MCP_WORKSPACE"]
        command = [filled_in(snippet["command"], workspace), *(filled_in(arg, workspace) for arg in snippet.get("args", []))]
        env = {**GUI_ENV, **{name: filled_in(value, workspace) for name, value in snippet.get("env", {}).items()}}
        env |= {"MCP_STATE_DIR": dirs["MCP_STATE_DIR"], "MCP_HOMES_DIR": dirs["MCP_HOMES_DIR"]}
        proc = subprocess.Popen(command, cwd="/", env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            yield StdioPeer(proc)
        finally:
            proc.stdin.close()  # type: ignore[union-attr]
            assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()  # type: ignore[union-attr]
            proc.stdout.close()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]


@pytest.mark.parametrize("page", PAGES)
def test_readme_snippet_names_an_absolute_command_and_workspace(page: str) -> None:
    snippet = readme_snippet(page)
    assert snippet == readme_snippet()
    assert snippet["command"].startswith("/") and snippet["command"].endswith("/.venv/bin/mcp-bridge")
    assert snippet["env"]["MCP_WORKSPACE"].startswith("/")


def test_readme_snippet_started_from_root_lists_the_four_tools(desktop: StdioPeer) -> None:
    initialized = desktop.handshake("2025-11-25", "claude-ai")
    tools = desktop.result("tools/list")["tools"]
    assert initialized["protocolVersion"] == "2025-11-25"
    assert "mcp_list_tools first" in initialized["instructions"]
    assert [tool["name"] for tool in tools] == FOUR_TOOLS
    assert all("$schema" not in tool["outputSchema"] for tool in tools)  # Claude's 2020-12-only rule


def test_readme_snippet_answers_a_tool_call(desktop: StdioPeer) -> None:
    desktop.handshake("2025-11-25", "claude-ai")
    listed = desktop.result("tools/call", {"name": "mcp_list_tools", "arguments": {}})
    assert listed["isError"] is False
    assert listed["structuredContent"]["ok"] is True
