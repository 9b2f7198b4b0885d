"""A parked call's request_state opens it for its own caller, server and tool, before it expires.

The state is attacker-controlled input (the host echoes it back); these drive `Parking` with a call
that asks once, and a host channel that only records, on an injected clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import mcp_types as types
import pytest

from bridge.downstream.relay import Abilities, Answer, Ask, HostChannel
from bridge.errors import BridgeError
from bridge.tools.parked import Asks, Parking

QUESTION = types.ElicitRequest(params=types.ElicitRequestFormParams(message="Your name?", requested_schema={"type": "object"}))


class ModernHost:
    """A 2026-07-28 host as the relay sees it: it can elicit, and takes asks as input_required."""

    abilities = Abilities(elicit_form=True)
    wants_progress = False
    defers_asks = True
    caller = "alice"

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None: ...

    async def ask(self, request: Ask) -> Answer:
        raise AssertionError("a parked call never asks the host directly")


async def asks_once(channel: HostChannel) -> str:
    answer = await channel.ask(QUESTION)
    assert isinstance(answer, types.ElicitResult)
    return answer.action


@asynccontextmanager
async def running() -> AsyncIterator[tuple[Parking, Callable[[float], None]]]:
    """Parking served on this test's loop, on a clock the test moves (a task group cannot live in
    a fixture: pytest-asyncio tears fixtures down in another task)."""
    now = [1000.0]
    parking = Parking(ttl_s=60, max_parked=4, clock=lambda: now[0])
    async with anyio.create_task_group() as tg:
        await tg.start(parking.serve)

        def advance(seconds: float) -> None:
            now[0] += seconds

        yield parking, advance
        tg.cancel_scope.cancel()


async def parked(parking: Parking) -> Asks:
    asked = await parking.start("alice", "srv", "tool", ModernHost(), asks_once)
    assert isinstance(asked, Asks)
    assert list(asked.requests.values()) == [QUESTION]
    return asked


async def test_the_retry_with_the_state_delivers_the_answer_and_returns_the_result() -> None:
    async with running() as (park, _):
        asked = await parked(park)
        (key,) = asked.requests
        answer = {key: types.ElicitResult(action="accept")}
        assert await park.resume(asked.state, "alice", "srv", "tool", ModernHost(), answer) == "accept"


@pytest.mark.parametrize(
    ("caller", "server", "tool"), [("mallory", "srv", "tool"), ("alice", "other", "tool"), ("alice", "srv", "other")]
)
async def test_the_state_opens_nothing_for_another_caller_server_or_tool(caller: str, server: str, tool: str) -> None:
    async with running() as (park, _):
        asked = await parked(park)
        with pytest.raises(BridgeError, match="request_state is not one this bridge gave"):
            await park.resume(asked.state, caller, server, tool, ModernHost(), {})


async def test_an_altered_state_opens_nothing() -> None:
    async with running() as (park, _):
        asked = await parked(park)
        call_id, expires, mac = asked.state.split(".")
        flipped = mac[:-1] + ("0" if mac[-1] != "0" else "1")
        for forged in (f"{call_id}.{int(expires) + 3600}.{mac}", f"{call_id}.{expires}.{flipped}", "x.1.y", ""):
            with pytest.raises(BridgeError, match="request_state is not one this bridge gave"):
                await park.resume(forged, "alice", "srv", "tool", ModernHost(), {})


async def test_an_expired_state_opens_nothing() -> None:
    async with running() as (park, advance):
        asked = await parked(park)
        advance(61)
        with pytest.raises(BridgeError, match="or it expired"):
            await park.resume(asked.state, "alice", "srv", "tool", ModernHost(), {})


async def test_an_answer_of_the_wrong_kind_reaches_the_server_as_an_error() -> None:
    async def asks_and_reports(channel: HostChannel) -> str:
        answer = await channel.ask(QUESTION)
        return type(answer).__name__

    async with running() as (park, _):
        asked = await park.start("alice", "srv", "tool", ModernHost(), asks_and_reports)
        assert isinstance(asked, Asks)
        (key,) = asked.requests
        sampled = types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="x"), model="m")
        assert await park.resume(asked.state, "alice", "srv", "tool", ModernHost(), {key: sampled}) == "ErrorData"
