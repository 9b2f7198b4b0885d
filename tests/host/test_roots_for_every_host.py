"""A stdio server's `roots/list` is answered by the bridge with the workspace and the server's cwd,
whatever the host declares: Claude Desktop and ChatGPT declare no roots. In both protocol eras of the
host, and of the server: a request of the server's own (handshake era), or an `input_required`
round (a server of the 2026-07-28 era only).

Real SDK host clients that declare no roots drive the real bridge app; the bridge reaches the relay
fixture (`tests/servers/relay.py`) over real stdio, sandboxed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as mt
import pytest
from bridge_support import MakeBridge
from helpers import fixture_path
from mcp import Client

from bridge import internals
from bridge.host.app import build_app
from bridge.tools import Bridge

ERAS = ["handshake", "2026-07-28"]


def relay(*extra: str, cwd: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"transport": "stdio", "command": sys.executable, "args": [fixture_path("relay"), *extra]}
    return entry | ({"cwd": cwd} if cwd is not None else {})


@asynccontextmanager
async def rootless_host(bridge: Bridge, era: str) -> AsyncIterator[Client]:
    """A host that declares no roots (no `list_roots_callback`), as Claude Desktop and ChatGPT."""
    server = internals.lowlevel_server(build_app(bridge))
    async with Client(server, mode="legacy" if era == "handshake" else "auto") as client:
        yield client


async def bridged(client: Client, server: str, tool: str) -> str:
    call = {"server": server, "tool_name": tool, "arguments_json": "{}"}
    result = await client.call_tool("mcp_call_tool", call)
    shown = "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))
    assert not result.is_error, shown
    return shown


@pytest.mark.parametrize("era", ERAS)
async def test_a_stdio_server_that_asks_for_roots_gets_the_workspace_from_a_rootless_host(
    make_bridge: MakeBridge, era: str
) -> None:
    bridge = make_bridge({"both": relay()})
    async with rootless_host(bridge, era) as client:
        assert await bridged(client, "both", "roots") == bridge.settings.workspace.as_uri()


@pytest.mark.parametrize("era", ERAS)
async def test_a_2026_servers_input_required_roots_round_is_answered_for_a_rootless_host(
    make_bridge: MakeBridge, era: str
) -> None:
    bridge = make_bridge({"modern": relay("--modern-only")})
    async with rootless_host(bridge, era) as client:
        assert await bridged(client, "modern", "roots_round") == bridge.settings.workspace.as_uri()


@pytest.mark.parametrize("era", ERAS)
async def test_the_session_tells_a_stdio_server_of_roots_and_no_more(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge({"both": relay()})
    async with rootless_host(bridge, era) as client:
        advertised = json.loads(await bridged(client, "both", "abilities"))
    assert advertised == {"roots": {"listChanged": False}}


async def test_the_roots_are_the_workspace_and_the_servers_cwd(make_bridge: MakeBridge) -> None:
    bridge = make_bridge()
    (bridge.settings.workspace / "project").mkdir()
    added = bridge.add_server("both", command=sys.executable, args_json=json.dumps([fixture_path("relay")]), cwd="project")
    assert not added.is_error, added.text
    async with rootless_host(bridge, "handshake") as client:
        listed = await bridged(client, "both", "roots")
    workspace = bridge.settings.workspace
    assert listed.splitlines() == [workspace.as_uri(), (workspace / "project").as_uri()]


async def test_a_new_cwd_is_in_the_roots_the_server_lists_next(make_bridge: MakeBridge) -> None:
    """Roots never change under a live session: a new cwd re-registers the server, whose next
    session lists the new roots."""
    bridge = make_bridge()
    workspace = bridge.settings.workspace
    for folder in ("one", "two"):
        (workspace / folder).mkdir()
    args = json.dumps([fixture_path("relay")])
    async with rootless_host(bridge, "2026-07-28") as client:
        assert not bridge.add_server("both", command=sys.executable, args_json=args, cwd="one").is_error
        first = await bridged(client, "both", "roots")
        assert not bridge.add_server("both", command=sys.executable, args_json=args, cwd="two").is_error
        second = await bridged(client, "both", "roots")
    assert first.splitlines()[1:] == [(workspace / "one").as_uri()]
    assert second.splitlines()[1:] == [(workspace / "two").as_uri()]
