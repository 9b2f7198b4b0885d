"""What a downstream server sends back reaches the host, in both protocol eras and across them.

Real SDK host clients of both eras drive the real bridge app in process (the handshake era over the
SDK's in-memory streams, 2026-07-28 over its direct dispatcher); the bridge reaches the relay
fixture (`tests/servers/relay.py`) over real stdio pipes, sandboxed, on its worker loop, so every
relayed message also crosses from that loop to the host's. Each relay is checked against the same
server asked directly by a client with the same abilities.
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from bridge_proc import host_env, workdirs
from bridge_support import MakeBridge
from helpers import fixture_path, start_http_fixture
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from bridge import internals
from bridge.host.app import build_app
from bridge.tools import Bridge

ERAS = ["handshake", "2026-07-28"]
RELAY = {"relay": {"transport": "stdio", "command": sys.executable, "args": [fixture_path("relay")]}}
PUSHY = {"old": {"transport": "stdio", "command": sys.executable, "args": [fixture_path("pushy")]}}
MODERN_ONLY = {
    "modern": {"transport": "stdio", "command": sys.executable, "args": [fixture_path("relay"), "--modern-only"]}
}


class Host:
    """What a host answers and what it was sent: the callbacks a real host would have."""

    def __init__(self, *, elicit: str | None = "Ada", url: bool = False, sample: bool = False, roots: bool = False):
        self.answer = elicit
        self.url = url
        self.sample = sample
        self.roots = roots
        self.asked: list[mt.ElicitRequestParams] = []
        self.sampled: list[mt.CreateMessageRequestParams] = []
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[mt.LoggingMessageNotificationParams] = []

    async def on_elicit(self, context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        self.asked.append(params)
        if self.answer is None:
            return mt.ElicitResult(action="decline")
        if isinstance(params, mt.ElicitRequestURLParams):
            return mt.ElicitResult(action="accept")
        key = next(iter(params.requested_schema.get("properties", {"value": None})))
        return mt.ElicitResult(action="accept", content={key: self.answer})

    async def on_sample(self, context: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        self.sampled.append(params)
        return mt.CreateMessageResult(role="assistant", content=mt.TextContent(type="text", text="a haiku"), model="m")

    async def on_roots(self, context: Any) -> mt.ListRootsResult:
        return mt.ListRootsResult(roots=[mt.Root(uri="file:///etc")])  # never to be passed on unchecked

    async def on_log(self, params: mt.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    def callbacks(self) -> dict[str, Any]:
        found: dict[str, Any] = {"logging_callback": self.on_log}
        if self.answer is not None or self.url:
            found["elicitation_callback"] = self.on_elicit
        if self.sample:
            found["sampling_callback"] = self.on_sample
        if self.roots:
            found["list_roots_callback"] = self.on_roots
        return found


@asynccontextmanager
async def connected(bridge: Bridge, era: str, host: Host, *, logs: bool = False) -> AsyncIterator[Client]:
    """A real SDK client of `era` on the bridge's app; `logs`: it asks for info logs."""
    server = internals.lowlevel_server(build_app(bridge))
    mode = "legacy" if era == "handshake" else "auto"
    async with Client(server, mode=mode, log_level="info" if logs else None, **host.callbacks()) as client:
        if logs and era == "handshake":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.set_logging_level("info")
        yield client


@asynccontextmanager
async def direct(host: Host, *extra: str, era: str = "handshake") -> AsyncIterator[Client]:
    """The relay fixture asked without the bridge, by a client with the host's abilities."""
    params = StdioServerParameters(command=sys.executable, args=[fixture_path("relay"), *extra])
    async with Client(params, mode="legacy" if era == "handshake" else "auto", **host.callbacks()) as client:
        yield client


async def bridged(
    client: Client, tool: str, arguments: dict[str, Any] | None = None, server: str = "relay", **extra: Any
) -> mt.CallToolResult:
    progress = extra.pop("progress", None)
    call = {"server": server, "tool_name": tool, "arguments_json": json.dumps(arguments or {}), **extra}
    return await client.call_tool("mcp_call_tool", call, progress_callback=progress)


def text(result: mt.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))


def first_text(result: mt.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, mt.TextContent)
    return block.text


# -- 1. the host's abilities reach the downstream --------------------------------------------


ROOTS = {"roots": {"listChanged": False}}  # the bridge answers a stdio server's roots itself, for every host


@pytest.mark.parametrize("era", ERAS)
async def test_the_downstream_session_advertises_what_the_host_can_do_no_more(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit="Ada", sample=True)
    async with connected(bridge, era, host) as client:
        seen = json.loads(first_text(await bridged(client, "abilities")))
    async with direct(host) as client:
        directly = json.loads(first_text(await client.call_tool("abilities", {})))
    assert directly == {"elicitation": {"form": {}, "url": {}}, "sampling": {}}
    assert seen == {**directly, **ROOTS}


@pytest.mark.parametrize("era", ERAS)
async def test_a_host_without_abilities_gets_a_session_that_advertises_only_the_bridges_roots(
    make_bridge: MakeBridge, era: str
) -> None:
    bridge = make_bridge(RELAY)
    async with connected(bridge, era, Host(elicit=None)) as client:
        assert json.loads(first_text(await bridged(client, "abilities"))) == ROOTS


async def test_hosts_with_different_abilities_get_different_warm_sessions(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY)
    async with connected(bridge, "handshake", Host(elicit=None)) as plain:
        first = first_text(await bridged(plain, "instance"))
        async with connected(bridge, "handshake", Host(elicit="Ada", url=True)) as able:
            other = first_text(await bridged(able, "instance"))
            assert json.loads(first_text(await bridged(able, "abilities"))) == {"elicitation": {"form": {}, "url": {}}, **ROOTS}
        again = first_text(await bridged(plain, "instance"))
    assert first == again != other


# -- 2. relayed within the call that caused it -----------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_downstream_progress_reaches_the_host_in_order_on_its_own_call(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY, progress_interval_s=0)
    host = Host(elicit=None)
    async with connected(bridge, era, host) as client:
        result = await bridged(client, "progress", {"steps": 5}, progress=host.on_progress)
    assert first_text(result) == "done"
    assert host.progress == [(float(step), 5.0, f"step {step}") for step in range(1, 6)]


@pytest.mark.parametrize("era", ERAS)
async def test_a_flood_of_progress_and_logs_is_bounded_and_ends_where_the_server_stopped(
    make_bridge: MakeBridge, era: str
) -> None:
    bridge = make_bridge(RELAY, progress_interval_s=0)
    host = Host(elicit=None)
    async with connected(bridge, era, host, logs=True) as client:
        result = await bridged(client, "flood", {"n": 400}, progress=host.on_progress)
    steps = [progress for progress, _, _ in host.progress]
    assert len(steps) == 101  # the first hundred, then the last one held back
    assert steps == sorted(steps) and steps[-1] == 400
    assert len(host.logs) == 50
    assert "[350 more log messages from the server were dropped after the first 50]" in text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_downstream_logs_reach_a_host_that_asked_for_them(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit=None)
    async with connected(bridge, era, host, logs=True) as client:
        await bridged(client, "chatter", {"n": 3})
    assert [(log.level, log.data["msg"]) for log in host.logs] == [("info", f"chatter {n}") for n in (1, 2, 3)]


@pytest.mark.parametrize("era", ERAS)
async def test_no_logs_reach_a_host_that_did_not_ask(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit=None)
    async with connected(bridge, era, host) as client:
        assert first_text(await bridged(client, "chatter", {"n": 3})) == "done"
    assert host.logs == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_form_elicitation_is_asked_of_the_host_and_its_answer_goes_back(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit="Ada")
    async with connected(bridge, era, host) as client:
        result = await bridged(client, "ask", {"question": "Your name?"})
    async with direct(Host(elicit="Ada")) as client:
        directly = await client.call_tool("ask", {"question": "Your name?"})
    assert first_text(result) == first_text(directly) == "accepted: Ada"
    assert [params.message for params in host.asked] == ["The MCP server 'relay' asks: Your name?"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_url_elicitation_reaches_a_host_that_takes_urls(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit="Ada", url=True)
    async with connected(bridge, era, host) as client:
        assert first_text(await bridged(client, "ask_url")) == "accept"
    assert isinstance(host.asked[0], mt.ElicitRequestURLParams)
    assert host.asked[0].url == "https://example.test/sign-in"


@pytest.mark.parametrize("era", ERAS)
async def test_the_hosts_decline_goes_back_down(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit=None, url=True)  # it takes elicitation requests, and declines forms
    async with connected(bridge, era, host) as client:
        assert first_text(await bridged(client, "ask", {"question": "Your name?"})) == "decline"


@pytest.mark.parametrize("era", ERAS)
async def test_an_elicitation_the_host_cannot_answer_is_declined_at_once_and_the_model_told(
    make_bridge: MakeBridge, era: str
) -> None:
    bridge = make_bridge(PUSHY)  # it asks whatever its client declared
    async with connected(bridge, era, Host(elicit=None)) as client:
        result = await bridged(client, "ask", {"question": "Your name?"}, server="old")
    assert first_text(result).startswith("decline")
    assert "(form elicitation: 'Your name?'); this host cannot answer that, so the bridge declined it" in text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_that_checks_the_hosts_abilities_fails_at_once_in_its_own_words(
    make_bridge: MakeBridge, era: str
) -> None:
    with start_http_fixture("relay") as (base_url, _proc):  # spoken to in 2026-07-28 for a host that cannot elicit
        bridge = make_bridge({"relay": {"transport": "http", "url": f"{base_url}/mcp"}})
        async with connected(bridge, era, Host(elicit=None)) as client:
            result = await bridged(client, "ask", {"question": "Your name?"})
    assert result.is_error
    assert "elicitation via server-initiated requests is unavailable" in text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_a_sampling_request_is_asked_of_the_host(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit=None, sample=True)
    async with connected(bridge, era, host) as client:
        result = await bridged(client, "sample", {"prompt": "a haiku please"})
    assert first_text(result) == "sampled: a haiku"
    assert host.sampled[0].messages[0].content.text == "a haiku please"  # type: ignore[union-attr]


@pytest.mark.parametrize("era", ERAS)
async def test_sampling_without_the_hosts_ability_is_refused_with_a_clear_message(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(PUSHY)
    async with connected(bridge, era, Host(elicit=None)) as client:
        result = await bridged(client, "sample", {"prompt": "a haiku please"}, server="old")
    assert result.is_error
    assert "refused: The client cannot answer sampling requests." in text(result)
    assert "this host cannot answer sampling, so the bridge refused it" in text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_roots_are_the_workspace_never_the_hosts_own(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    async with connected(bridge, era, Host(elicit=None, roots=True)) as client:
        result = await bridged(client, "roots")
    assert first_text(result) == bridge.settings.workspace.as_uri()


async def test_a_cancelled_call_is_cancelled_downstream_and_the_warm_session_survives(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit=None)
    async with connected(bridge, "handshake", host) as client:
        before = first_text(await bridged(client, "instance"))
        asleep = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            asleep.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: bridged(client, "sleeper", progress=on_progress))
            await asleep.wait()
            tg.cancel_scope.cancel()
        assert first_text(await bridged(client, "cancelled")) == "true"
        assert first_text(await bridged(client, "instance")) == before


# -- 3. across eras ----------------------------------------------------------------------------


async def test_a_2026_host_answers_a_handshake_era_elicitation_through_input_required(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY)
    host = Host(elicit="Ada")
    async with connected(bridge, "2026-07-28", host) as client:
        call = {"server": "relay", "tool_name": "ask", "arguments_json": json.dumps({"question": "Your name?"})}
        first = await client.session.call_tool("mcp_call_tool", call, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult)
        (key, ask), = first.input_requests.items()  # type: ignore[union-attr]
        assert isinstance(ask, mt.ElicitRequest) and ask.params.message == "The MCP server 'relay' asks: Your name?"
        answer = {key: mt.ElicitResult(action="accept", content={"value": "Grace"})}
        done = await client.session.call_tool(
            "mcp_call_tool", call, input_responses=answer, request_state=first.request_state, allow_input_required=True
        )
    assert isinstance(done, mt.CallToolResult)
    assert first_text(done) == "accepted: Grace"


async def test_a_tampered_request_state_is_refused(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY)
    async with connected(bridge, "2026-07-28", Host(elicit="Ada")) as client:
        call = {"server": "relay", "tool_name": "ask", "arguments_json": json.dumps({"question": "Your name?"})}
        first = await client.session.call_tool("mcp_call_tool", call, allow_input_required=True)
        assert isinstance(first, mt.InputRequiredResult) and first.request_state
        (key,) = first.input_requests or {}
        answer = {key: mt.ElicitResult(action="accept", content={"value": "Eve"})}
        state = first.request_state[:-2] + ("AA" if not first.request_state.endswith("AA") else "BB")
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "mcp_call_tool", call, input_responses=answer, request_state=state, allow_input_required=True
            )


async def test_a_2026_host_answers_a_2026_servers_input_required_round(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(MODERN_ONLY)
    host = Host(elicit="Ada")
    async with connected(bridge, "2026-07-28", host) as client:
        result = await bridged(client, "guard", {"question": "Your name?"}, server="modern")
    async with direct(host, "--modern-only", era="2026-07-28") as client:
        directly = await client.call_tool("guard", {"question": "Your name?"})
    assert first_text(result) == first_text(directly) == "accepted: Ada (state asked)"


async def test_a_handshake_host_gets_a_2026_servers_input_required_as_its_own_requests(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(MODERN_ONLY)
    host = Host(elicit="Ada")
    async with connected(bridge, "handshake", host) as client:
        result = await bridged(client, "guard", {"question": "Your name?"}, server="modern")
    assert first_text(result) == "accepted: Ada (state asked)"
    assert [params.message for params in host.asked] == ["The MCP server 'modern' asks: Your name?"]


# -- 4. content passes through within budgets ------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_an_image_reaches_the_host_as_the_same_block_bytes_intact(make_bridge: MakeBridge, era: str) -> None:
    bridge = make_bridge(RELAY)
    async with connected(bridge, era, Host(elicit=None)) as client:
        result = await bridged(client, "picture", {"size": 3000})
    async with direct(Host(elicit=None)) as client:
        (image,) = (await client.call_tool("picture", {"size": 3000})).content
    assert result.content[1:] == [image]
    assert "[image: image/png, 3000 bytes, attached]" in first_text(result)


async def test_an_audio_block_reaches_the_host(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY)
    async with connected(bridge, "handshake", Host(elicit=None)) as client:
        result = await bridged(client, "sound")
    assert isinstance(result.content[1], mt.AudioContent) and result.content[1].mime_type == "audio/wav"


async def test_an_image_over_the_media_budget_becomes_a_line_with_its_size(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY, max_media_bytes=2000)
    async with connected(bridge, "handshake", Host(elicit=None)) as client:
        result = await bridged(client, "picture", {"size": 3000})
    assert len(result.content) == 1
    assert first_text(result) == "[image: image/png, 3000 bytes, over the 2000 bytes media budget, not shown]"


async def test_an_embedded_text_resource_shows_its_text(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY)
    async with connected(bridge, "handshake", Host(elicit=None)) as client:
        result = await bridged(client, "document")
    assert first_text(result).endswith("\ninline note body")


async def test_a_linked_resource_stays_a_link_and_is_read_through_the_bridge(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY, max_chars=20_000)
    async with connected(bridge, "handshake", Host(elicit=None)) as client:
        linked = await bridged(client, "link")
        read = await bridged(client, "resources/read", {"uri": "relay://notes/long"})
    async with direct(Host(elicit=None)) as client:
        whole = (await client.read_resource("relay://notes/long")).contents[0]
    assert isinstance(linked.content[1], mt.ResourceLink) and str(linked.content[1].uri) == "relay://notes/long"
    assert isinstance(whole, mt.TextResourceContents)
    assert first_text(read) == whole.text


async def test_a_uri_the_server_never_listed_nor_linked_is_not_read(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY)
    async with connected(bridge, "handshake", Host(elicit=None)) as client:
        result = await bridged(client, "resources/read", {"uri": "file:///etc/passwd"})
    assert result.is_error
    assert "neither listed nor linked" in text(result)


# -- 5. a cut result can be read on ----------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_long_answer_is_read_to_its_end_in_parts_that_join_to_the_original(
    make_bridge: MakeBridge, era: str
) -> None:
    bridge = make_bridge(RELAY, max_chars=4000)
    async with direct(Host(elicit=None)) as client:
        original = first_text(await client.call_tool("long", {"n": 10_000}))
    parts: list[str] = []
    async with connected(bridge, era, Host(elicit=None)) as client:
        result = await bridged(client, "long", {"n": 10_000})
        while True:
            data = result.structured_content
            assert data is not None and len(first_text(result)) <= 4000
            end = data.get("next_offset", data["full_length"])
            parts.append(first_text(result)[: end - data["offset"]])
            if "next_offset" not in data:
                break
            assert f"result_handle={data['result_handle']!r}, offset={end})" in first_text(result)
            result = await bridged(client, "long", {"n": 10_000}, result_handle=data["result_handle"], offset=end)
    assert len(parts) == 3
    assert "".join(parts) == original


async def test_a_result_handle_reads_nothing_for_another_caller(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(RELAY, max_chars=4000)
    async with connected(bridge, "handshake", Host(elicit=None)) as client:
        data = (await bridged(client, "long", {"n": 10_000})).structured_content
        assert data is not None
        mine = await bridged(client, "long", result_handle=data["result_handle"], offset=data["next_offset"])
    async with connected(bridge, "handshake", Host(elicit=None)) as other:
        theirs = await bridged(other, "long", result_handle=data["result_handle"], offset=data["next_offset"])
    assert not mine.is_error
    assert theirs.is_error and "names no result kept for this caller" in text(theirs)


# -- the same, with server-everything, over HTTP, and through the real mcp-bridge process ---------

EVERYTHING = Path(__file__).resolve().parents[1] / "node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


@pytest.mark.parametrize("able", [True, False])
async def test_server_everything_lists_the_same_tools_through_the_bridge_as_directly(
    make_bridge: MakeBridge, able: bool
) -> None:
    node = shutil.which("node")
    assert node is not None and EVERYTHING.is_file()
    bridge = make_bridge({"everything": {"transport": "stdio", "command": node, "args": [str(EVERYTHING), "stdio"]}})
    host = Host(elicit="Ada" if able else None, sample=able, roots=able)
    with_roots = Host(elicit="Ada" if able else None, sample=able, roots=True)  # as the bridge answers them
    async with Client(StdioServerParameters(command=node, args=[str(EVERYTHING), "stdio"]), **with_roots.callbacks()) as client:
        directly = {tool.name for tool in (await client.list_tools()).tools}
    async with connected(bridge, "handshake", host) as client:
        catalog = await client.call_tool("mcp_list_tools", {"server": "everything"})
    listed = {tool["name"] for tool in (catalog.structured_content or {})["tools"]}
    assert listed == directly
    assert ("trigger-elicitation-request" in listed) is able


async def test_server_everything_elicitation_is_answered_by_the_host(make_bridge: MakeBridge) -> None:
    node = shutil.which("node")
    assert node is not None
    bridge = make_bridge({"everything": {"transport": "stdio", "command": node, "args": [str(EVERYTHING), "stdio"]}})
    host = Host(elicit="Ada")
    async with connected(bridge, "2026-07-28", host) as client:
        result = await bridged(client, "trigger-elicitation-request", server="everything")
    assert "- Name: Ada" in text(result)
    assert host.asked[0].message == "The MCP server 'everything' asks: Please provide inputs for the following fields:"


@pytest.mark.parametrize("era", ERAS)
async def test_progress_and_an_elicitation_are_relayed_from_an_http_server(make_bridge: MakeBridge, era: str) -> None:
    with start_http_fixture("relay") as (base_url, _proc):
        bridge = make_bridge({"web": {"transport": "http", "url": f"{base_url}/mcp"}}, progress_interval_s=0)
        host = Host(elicit="Ada")
        async with connected(bridge, era, host) as client:
            asked = await bridged(client, "ask", {"question": "Your name?"}, server="web")
            stepped = await bridged(client, "progress", {"steps": 3}, server="web", progress=host.on_progress)
            roots = await bridged(client, "roots", server="web")
    assert first_text(asked) == "accepted: Ada"
    assert first_text(stepped) == "done"
    assert [step for step, _, _ in host.progress] == [1.0, 2.0, 3.0]
    assert json.loads(first_text(roots)) == {"result": ""}  # no local path told to a server off this machine


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_elicitation_crosses_the_real_bridge_process_in_both_eras(mode: str) -> None:
    host = Host(elicit="Ada")
    with workdirs() as dirs:
        params = StdioServerParameters(command=str(Path(sys.executable).with_name("mcp-bridge")), env=host_env(dirs))
        async with Client(params, mode=mode, **host.callbacks()) as client:
            relay = {"name": "relay", "command": sys.executable, "args_json": json.dumps([fixture_path("relay")])}
            added = await client.call_tool("mcp_add_server", relay)
            assert not added.is_error, text(added)
            result = await bridged(client, "ask", {"question": "Your name?"})
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert first_text(result) == "accepted: Ada"
    assert [params.message for params in host.asked] == ["The MCP server 'relay' asks: Your name?"]
