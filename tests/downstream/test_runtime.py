"""The tools work from wherever a host calls them: a plain thread, inside a running event loop
(sync face or async face), and from several threads at once. All downstream work runs on the
bridge's own worker loop, so none of these callers can deadlock it or nest `asyncio.run()`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading

import pytest
from bridge_support import StdioArgs

from bridge.tools import Bridge, Reply

JOIN_S = 60.0


@pytest.fixture
def echo_bridge(bridge: Bridge, stdio_args: StdioArgs) -> Bridge:
    reply = bridge.add_server("echo", command=sys.executable, args_json=stdio_args("echo"))
    assert not reply.is_error, reply.text
    return bridge


def echo(bridge: Bridge, text: str) -> Reply:
    return bridge.call_tool("echo", "echo", json.dumps({"text": text}))


def run_in_thread(target) -> list[object]:
    """Run `target()` in a fresh thread; return what it returned or raised."""
    outcome: list[object] = []

    def main() -> None:
        try:
            outcome.append(target())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(exc)

    thread = threading.Thread(target=main)
    thread.start()
    thread.join(JOIN_S)
    assert not thread.is_alive(), "the call never returned"
    return outcome


def test_a_call_works_from_a_plain_thread(echo_bridge: Bridge) -> None:
    [reply] = run_in_thread(lambda: echo(echo_bridge, "from a thread"))
    assert isinstance(reply, Reply) and reply.text == "from a thread"


def test_the_sync_face_works_inside_a_running_event_loop(echo_bridge: Bridge) -> None:
    async def host() -> Reply:
        asyncio.get_running_loop()  # a loop is running here, as in any async host
        return echo(echo_bridge, "inside asyncio.run")

    assert asyncio.run(host()).text == "inside asyncio.run"


def test_the_async_face_works_from_a_foreign_event_loop(echo_bridge: Bridge) -> None:
    async def host() -> list[Reply]:
        return list(
            await asyncio.gather(
                echo_bridge.call_tool_async("echo", "echo", '{"text": "one"}'),
                echo_bridge.list_tools_async("echo"),
            )
        )

    called, listed = asyncio.run(host())
    assert called.text == "one"
    assert "echo" in {tool.name for tool in listed.data.tools}


def test_an_awaited_call_does_not_block_the_hosts_event_loop(echo_bridge: Bridge) -> None:
    async def host() -> tuple[bool, str]:
        call = asyncio.ensure_future(echo_bridge.call_tool_async("echo", "slow", '{"seconds": 0.5}'))
        # The call's first step runs before this task resumes; a blocking call would finish inside it.
        await asyncio.sleep(0)
        pending_while_host_runs = not call.done()
        return pending_while_host_runs, (await call).text

    pending_while_host_runs, text = asyncio.run(host())
    assert pending_while_host_runs
    assert text == "slept"


def test_concurrent_calls_from_several_threads_each_get_their_own_answer(echo_bridge: Bridge) -> None:
    texts = [f"thread-{i}" for i in range(6)]
    outcomes: dict[str, object] = {}
    barrier = threading.Barrier(len(texts))

    def worker(text: str) -> None:
        barrier.wait(JOIN_S)
        try:
            outcomes[text] = echo(echo_bridge, text)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcomes[text] = exc

    threads = [threading.Thread(target=worker, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_S)
    assert not any(thread.is_alive() for thread in threads)
    assert {text: getattr(reply, "text", reply) for text, reply in outcomes.items()} == {text: text for text in texts}


def test_concurrent_first_calls_to_different_servers_all_succeed(bridge: Bridge, stdio_args: StdioArgs) -> None:
    names = [f"echo{i}" for i in range(3)]
    for name in names:
        assert not bridge.add_server(name, command=sys.executable, args_json=stdio_args("echo")).is_error
    outcomes: dict[str, object] = {}

    def worker(name: str) -> None:
        outcomes[name] = bridge.call_tool(name, "echo", json.dumps({"text": name}))

    threads = [threading.Thread(target=worker, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_S)
    assert {name: getattr(reply, "text", reply) for name, reply in outcomes.items()} == {name: name for name in names}


def test_a_closed_bridge_starts_its_worker_loop_again_on_the_next_call(echo_bridge: Bridge) -> None:
    assert echo(echo_bridge, "before").text == "before"
    echo_bridge.close()
    assert echo(echo_bridge, "after").text == "after"
