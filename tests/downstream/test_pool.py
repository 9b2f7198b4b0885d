"""The session pool's rules, observed on real sandboxed children: reuse, idle expiry, the limit,
eviction on change, replacement after a death, no head-of-line blocking, nothing left behind.

Each server gets a unique marker argument, so its processes (bwrap and the child inside) can be
found in /proc; no test asserts a duration.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from helpers import fixture_path, pids_with_marker, wait_pids_gone

from bridge.downstream import stdio
from bridge.settings import Settings
from bridge.tools import Bridge, Reply

GONE_WITHIN_S = 30.0


@pytest.fixture
def dirs() -> Iterator[tuple[Path, Path]]:
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="bridge-pool-"))
    (base / "ws").mkdir()
    yield base / "ws", base / "state"
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def make_bridge(dirs: tuple[Path, Path]) -> Iterator[Any]:
    made: list[Bridge] = []

    def make(**settings: Any) -> Bridge:
        workspace, state = dirs
        bridge = Bridge(Settings(workspace=workspace, state_dir=state, homes_dir=state.parent / "homes", **settings), {})
        made.append(bridge)
        return bridge

    yield make
    for bridge in made:
        bridge.close()


def add(bridge: Bridge, name: str, fixture: str = "echo", *extra: str) -> str:
    """Register a fixture under `name` with a fresh marker; return the marker."""
    marker = f"marker-{uuid.uuid4().hex}"
    reply = bridge.add_server(name, command=sys.executable, args_json=json.dumps([fixture_path(fixture), marker, *extra]))
    assert not reply.is_error, reply.text
    return marker


def echo(bridge: Bridge, name: str, text: str = "hi") -> Reply:
    return bridge.call_tool(name, "echo", json.dumps({"text": text}))


def test_a_warm_session_serves_later_calls_from_the_same_child(make_bridge: Any) -> None:
    bridge = make_bridge()
    marker = add(bridge, "a")
    assert echo(bridge, "a").text == "hi"
    first = pids_with_marker(marker)
    assert echo(bridge, "a", "again").text == "again"
    assert pids_with_marker(marker) == first != set()


def test_idle_zero_closes_the_session_after_each_call(make_bridge: Any) -> None:
    bridge = make_bridge(session_idle_s=0)
    marker = add(bridge, "a")
    assert echo(bridge, "a").text == "hi"
    assert wait_pids_gone(pids_with_marker(marker), GONE_WITHIN_S) == set()


def test_an_idle_session_closes_after_the_idle_time(make_bridge: Any) -> None:
    bridge = make_bridge(session_idle_s=0.5)
    marker = add(bridge, "a")
    assert echo(bridge, "a").text == "hi"
    pids = pids_with_marker(marker)
    assert pids
    assert wait_pids_gone(pids, GONE_WITHIN_S) == set()


def test_the_session_limit_closes_the_least_recently_used_idle_session(make_bridge: Any) -> None:
    bridge = make_bridge(max_sessions=2)
    markers = {name: add(bridge, name) for name in ("a", "b", "c")}
    echo(bridge, "a")
    echo(bridge, "b")
    echo(bridge, "a")  # b is now the least recently used
    echo(bridge, "c")
    assert wait_pids_gone(pids_with_marker(markers["b"]), GONE_WITHIN_S) == set()
    assert pids_with_marker(markers["a"]) and pids_with_marker(markers["c"])


def test_a_new_server_starts_without_waiting_for_an_idle_session_to_close(make_bridge: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(stdio, "CLOSE_GRACE_S", 600.0)  # a child that lingers would take ten minutes to close
    bridge = make_bridge(max_sessions=2)
    lingering = {name: add(bridge, name, "echo", "--linger") for name in ("a", "b")}
    add(bridge, "c")
    echo(bridge, "a")
    echo(bridge, "b")

    assert echo(bridge, "c", "at once").text == "at once"
    still_closing = pids_with_marker(lingering["a"])  # the least recently used, told to close

    assert still_closing  # c started while a's child was still in its grace period
    assert pids_with_marker(lingering["b"])
    for pid in still_closing:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert wait_pids_gone(still_closing, GONE_WITHIN_S) == set()


def _busy(bridge: Bridge, name: str) -> None:
    """Until a call on `name` is in flight (its session in use)."""
    while not any(live.in_use for live in bridge.sessions._live.get(name, [])):
        threading.Event().wait(0.01)


def test_a_new_server_gets_the_session_a_busy_pool_frees_when_a_call_ends(make_bridge: Any) -> None:
    bridge = make_bridge(max_sessions=1, start_timeout=60)
    add(bridge, "a")
    markers = add(bridge, "c")
    echo(bridge, "a")
    slow, result = _in_thread(lambda: bridge.call_tool("a", "slow", '{"seconds": 2}'))
    _busy(bridge, "a")

    assert echo(bridge, "c", "after a").text == "after a"  # not after MCP_START_TIMEOUT: at a's release
    slow.join()
    assert result[0].text == "slept" and pids_with_marker(markers)


def test_a_pool_busy_past_the_start_timeout_is_a_retryable_timeout_that_does_not_hold_the_server_back(
    make_bridge: Any,
) -> None:
    bridge = make_bridge(max_sessions=1, start_timeout=5)  # long enough for c to start once there is room
    add(bridge, "a")
    add(bridge, "c")
    echo(bridge, "a")
    slow, _result = _in_thread(lambda: bridge.call_tool("a", "slow", '{"seconds": 10}'))
    _busy(bridge, "a")

    beside, other = _in_thread(lambda: echo(bridge, "c", "beside"))  # a second caller waits behind the first
    refused = echo(bridge, "c")
    beside.join()
    slow.join()

    for reply in (refused, other[0]):
        assert reply.data.code == "timeout" and reply.data.retryable, reply.text  # type: ignore[attr-defined]
        assert "MCP_MAX_SESSIONS" in reply.text and "MCP_START_TIMEOUT" in reply.text
    assert echo(bridge, "c", "free now").text == "free now"  # the twin: no back-off for the server


def test_changing_an_entry_closes_its_session_and_the_next_call_uses_the_new_one(make_bridge: Any) -> None:
    bridge = make_bridge()
    old = add(bridge, "a")
    echo(bridge, "a")
    new = add(bridge, "a")  # re-registration with a different command line
    assert not pids_with_marker(old)
    assert echo(bridge, "a").text == "hi"
    assert pids_with_marker(new)


def test_removing_a_server_kills_its_child_at_once(make_bridge: Any) -> None:
    bridge = make_bridge()
    marker = add(bridge, "a")
    echo(bridge, "a")
    assert pids_with_marker(marker)
    assert not bridge.remove_server("a").is_error
    assert not pids_with_marker(marker)


def test_a_dead_child_costs_one_error_and_is_replaced_on_the_next_call(make_bridge: Any) -> None:
    bridge = make_bridge()
    marker = add(bridge, "a")
    echo(bridge, "a")
    for pid in pids_with_marker(marker):
        with suppress(ProcessLookupError):  # the sandbox's inner processes die with its outer one
            os.kill(pid, signal.SIGKILL)
    failed = echo(bridge, "a")
    assert failed.is_error and failed.data.code == "child_exited", failed.text  # type: ignore[attr-defined]
    assert echo(bridge, "a", "back").text == "back"


def test_a_timed_out_session_is_not_reused(make_bridge: Any) -> None:
    bridge = make_bridge(timeout=2)
    marker = add(bridge, "a")
    echo(bridge, "a")
    hung = pids_with_marker(marker)
    timed_out = bridge.call_tool("a", "slow", '{"seconds": 30}')
    assert timed_out.data.code == "timeout"  # type: ignore[attr-defined]
    assert wait_pids_gone(hung, GONE_WITHIN_S) == set()
    assert echo(bridge, "a", "fresh").text == "fresh"


def tool_names(bridge: Bridge, server: str) -> set[str]:
    return {tool.name for tool in bridge.list_tools(server).data.tools}  # type: ignore[attr-defined]


def _in_thread(func: Any) -> tuple[threading.Thread, list[Reply]]:
    out: list[Reply] = []
    thread = threading.Thread(target=lambda: out.append(func()))
    thread.start()
    return thread, out


def test_a_slow_call_does_not_block_other_calls_to_the_same_server(make_bridge: Any) -> None:
    bridge = make_bridge()
    add(bridge, "a")
    echo(bridge, "a")
    slow, result = _in_thread(lambda: bridge.call_tool("a", "slow", '{"seconds": 5}'))
    assert echo(bridge, "a", "meanwhile").text == "meanwhile"
    assert slow.is_alive()  # the slow call was still running while ours completed
    slow.join()
    assert result[0].text == "slept"


def test_a_hung_server_delays_no_other_server(make_bridge: Any) -> None:
    bridge = make_bridge(timeout=8, start_timeout=8)
    add(bridge, "hung", "hang")
    add(bridge, "a")
    hung, result = _in_thread(lambda: bridge.call_tool("hung", "anything", "{}"))
    assert echo(bridge, "a", "unblocked").text == "unblocked"
    assert hung.is_alive()
    hung.join()
    assert result[0].data.code == "timeout"  # type: ignore[attr-defined]


def test_a_tool_added_during_a_session_is_found_after_list_changed(make_bridge: Any) -> None:
    bridge = make_bridge()
    add(bridge, "g", "growing")
    assert tool_names(bridge, "g") == {"grow"}
    assert bridge.call_tool("g", "grow").text == "grown"
    assert tool_names(bridge, "g") == {"grow", "extra"}
    assert bridge.call_tool("g", "extra").text == "extra is here"


def test_closing_the_bridge_kills_every_live_child(make_bridge: Any) -> None:
    bridge = make_bridge()
    markers = [add(bridge, name) for name in ("a", "b")]
    echo(bridge, "a")
    echo(bridge, "b")
    pids = set().union(*(pids_with_marker(marker) for marker in markers))
    assert len(pids) >= 2
    bridge.close()
    assert wait_pids_gone(pids, GONE_WITHIN_S) == set()


def test_a_launch_is_prepared_and_undone_in_a_thread_never_on_the_loop(make_bridge: Any, monkeypatch: Any) -> None:
    """Preparing makes the home, the placeholders and their ledger; undoing removes them, scans for
    new `.git` dirs and may wait for a cgroup to empty: ~17 ms or more the loop serving the host
    must not wait."""

    threads: dict[str, str] = {}
    real_prepare, real_undo = stdio.prepare_launch, stdio._undo

    def prepare(*args: Any, **kwargs: Any) -> Any:
        threads["prepare"] = threading.current_thread().name
        return real_prepare(*args, **kwargs)

    def undo(*args: Any) -> Any:
        threads["undo"] = threading.current_thread().name
        return real_undo(*args)

    monkeypatch.setattr(stdio, "prepare_launch", prepare)
    monkeypatch.setattr(stdio, "_undo", undo)
    bridge = make_bridge()
    add(bridge, "a")
    assert echo(bridge, "a").text == "hi"
    bridge.close()
    assert set(threads) == {"prepare", "undo"}
    assert "mcp-bridge-worker" not in threads.values()  # the loop's thread
