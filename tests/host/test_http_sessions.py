"""Sessions per client on a real HTTP face: a client that never closes its sessions keeps being
served (its least recently used idle session makes room), and only a client whose every session is
busy is refused. Every request goes to 127.0.0.1."""

from __future__ import annotations

from contextlib import ExitStack

import httpx
from bridge_proc import ACCEPT, FOUR_TOOLS, host_env, http_bridge, post_initialize
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TOKEN = "test-token-" + "7f3a9c2e5b1d4068"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


def in_session(response: httpx.Response) -> dict[str, str]:
    """The headers of a request in the session `response` opened."""
    return {**BEARER, **ACCEPT, "mcp-session-id": response.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}


def ping(url: str, session: dict[str, str]) -> int:
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return httpx.post(url, json=body, headers=session, trust_env=False, timeout=30).status_code


def test_the_least_recently_used_idle_session_makes_room_for_a_new_one(dirs: dict[str, str]) -> None:
    env = host_env(dirs, MCP_AUTH_TOKEN=TOKEN, MCP_MAX_HTTP_SESSIONS_PER_CLIENT="2")
    with http_bridge(env) as running:
        for _ in range(20):  # unauthenticated requests open nothing and count for nothing
            assert post_initialize(running.url).status_code == 401
        first, second = (in_session(post_initialize(running.url, **BEARER)) for _ in range(2))
        assert ping(running.url, first) == 200  # second is now the least recently used

        third = post_initialize(running.url, **BEARER)

        assert third.status_code == 200
        assert ping(running.url, second) == 404  # closed to make room
        assert ping(running.url, first) == 200 and ping(running.url, in_session(third)) == 200


def test_a_client_whose_every_session_is_busy_is_refused_until_one_is_idle(dirs: dict[str, str]) -> None:
    env = host_env(dirs, MCP_AUTH_TOKEN=TOKEN, MCP_MAX_HTTP_SESSIONS_PER_CLIENT="2")
    with http_bridge(env) as running, ExitStack() as streams:
        sessions = [in_session(post_initialize(running.url, **BEARER)) for _ in range(2)]
        held = [streams.enter_context(httpx.stream("GET", running.url, headers={**s, "Accept": "text/event-stream"},
                                                   trust_env=False, timeout=30)) for s in sessions]
        assert [r.status_code for r in held] == [200, 200]  # an open GET stream: the session is busy

        refused = post_initialize(running.url, **BEARER)
        held[0].close()  # the first session is idle again
        admitted = post_initialize(running.url, **BEARER)

        assert refused.status_code == 503 and "MCP_MAX_HTTP_SESSIONS_PER_CLIENT" in refused.text
        assert admitted.status_code == 200
        assert ping(running.url, sessions[0]) == 404 and ping(running.url, sessions[1]) == 200


async def test_a_real_client_that_never_closes_its_sessions_keeps_being_served(dirs: dict[str, str]) -> None:
    with http_bridge(host_env(dirs)) as running:  # the default bound: 16 sessions per client
        for _ in range(40):
            http = create_mcp_http_client()
            async with http, streamable_http_client(running.url, http_client=http, terminate_on_close=False) as (r, w):
                async with ClientSession(r, w) as session:
                    await session.initialize()
                    tools = [tool.name for tool in (await session.list_tools()).tools]
                    assert tools == FOUR_TOOLS
                    assert not (await session.call_tool("mcp_list_tools", {})).is_error
        assert "Too many open sessions" not in running.stderr
