"""Back-off: a server that keeps failing to start is not spawned on every call.

The rules are checked on `Backoff` with a clock the test moves (hold lengths, doubling, the cap);
the effect through the bridge with a real child that counts its own starts in a file.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from bridge_support import BridgeDirs, MakeBridge, error, ok
from helpers import fixture_path

from bridge.downstream.backoff import FIRST_HOLD_S, Backoff
from bridge.errors import BridgeError
from bridge.models import HttpServerSpec, StdioServerSpec

SPEC = StdioServerSpec(command="/bin/false")
FAILURE = BridgeError("child_exited", "The server exited with code 1.", exit_code=1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def held(backoff: Backoff, name: str = "s", spec: StdioServerSpec | HttpServerSpec = SPEC) -> BridgeError | None:
    try:
        backoff.check(name, spec)
    except BridgeError as exc:
        return exc
    return None


def test_the_hold_starts_after_the_set_number_of_failures_and_doubles_up_to_the_cap() -> None:
    clock = Clock()
    backoff = Backoff(after=3, max_s=12.0, clock=clock)
    backoff.failed("s", SPEC, FAILURE)
    backoff.failed("s", SPEC, FAILURE)
    assert held(backoff) is None
    holds = []
    for _ in range(4):
        backoff.failed("s", SPEC, FAILURE)
        error = held(backoff)
        assert error is not None
        holds.append(error.detail["retry_in_s"])
        clock.now += error.detail["retry_in_s"]  # the hold has passed: one attempt goes through
        assert held(backoff) is None
    assert holds == [FIRST_HOLD_S, 2 * FIRST_HOLD_S, 12.0, 12.0]


def test_a_held_call_repeats_the_last_error_and_says_when_and_how_to_retry() -> None:
    backoff = Backoff(after=1, max_s=300, clock=Clock())
    backoff.failed("s", SPEC, FAILURE)
    error = held(backoff)
    assert error is not None
    assert (error.code, error.retryable) == ("child_exited", True)
    assert error.message.startswith("The server exited with code 1.")
    assert "tries again in 5 s" in error.message and "mcp_add_server" in error.message
    assert error.detail["exit_code"] == 1 and error.detail["failures"] == 1 and error.detail["held"] is True
    assert "retry_at" in error.detail


def test_a_success_or_a_reset_clears_the_count() -> None:
    backoff = Backoff(after=2, max_s=300, clock=Clock())
    backoff.failed("s", SPEC, FAILURE)
    backoff.reset("s")  # a session opened
    backoff.failed("s", SPEC, FAILURE)
    assert held(backoff) is None
    backoff.failed("s", SPEC, FAILURE)
    assert held(backoff) is not None
    backoff.reset("s")
    assert held(backoff) is None


def test_a_changed_spec_or_another_server_is_not_held() -> None:
    backoff = Backoff(after=1, max_s=300, clock=Clock())
    backoff.failed("s", SPEC, FAILURE)
    assert held(backoff, "s", StdioServerSpec(command="/bin/true")) is None
    assert held(backoff, "other") is None


def test_max_zero_turns_back_off_off() -> None:
    backoff = Backoff(after=1, max_s=0, clock=Clock())
    for _ in range(5):
        backoff.failed("s", SPEC, FAILURE)
    assert held(backoff) is None


# -- through the bridge, with a real child -----------------------------------------------------


@pytest.fixture
def flaky(bridge_dirs: BridgeDirs) -> tuple[Path, Path, str]:
    """(count file, ready flag, args_json) of the flaky_start fixture in the test's workspace."""
    count, ready = bridge_dirs.workspace / "starts.log", bridge_dirs.workspace / "ready"
    return count, ready, json.dumps([fixture_path("flaky_start"), str(count), str(ready)])


def starts(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_a_server_failing_to_start_is_held_after_the_set_number_of_failures(
    make_bridge: MakeBridge, flaky: tuple[Path, Path, str]
) -> None:
    count, _, args = flaky
    bridge = make_bridge(backoff_after=2)
    ok(bridge.add_server("flaky", command=sys.executable, args_json=args))
    error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited")
    error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited")
    assert starts(count) == 2
    for _ in range(20):  # a model retrying in a loop
        data = error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited")
        assert data.detail["held"] is True and data.retryable
    data = error(bridge.list_tools("flaky"), "child_exited")
    assert data.detail["failures"] == 2 and data.detail["exit_code"] == 3
    assert starts(count) == 2


def test_re_registering_a_held_server_tries_it_at_once(make_bridge: MakeBridge, flaky: tuple[Path, Path, str]) -> None:
    count, ready, args = flaky
    bridge = make_bridge(backoff_after=1)
    ok(bridge.add_server("flaky", command=sys.executable, args_json=args))
    error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited")
    assert error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited").detail["held"]
    ready.touch()
    ok(bridge.add_server("flaky", command=sys.executable, args_json=args))
    assert ok(bridge.call_tool("flaky", "echo", '{"text": "back"}')).text == "back"
    assert starts(count) == 2


def test_a_success_in_between_restarts_the_count(make_bridge: MakeBridge, flaky: tuple[Path, Path, str]) -> None:
    count, ready, args = flaky
    bridge = make_bridge(backoff_after=2, session_idle_s=0)  # every call opens its own session
    ok(bridge.add_server("flaky", command=sys.executable, args_json=args))
    error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited")
    ready.touch()
    ok(bridge.call_tool("flaky", "echo", '{"text": "hi"}'))
    ready.unlink()
    error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited")
    assert "held" not in error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited").detail
    assert error(bridge.call_tool("flaky", "echo", '{"text": "hi"}'), "child_exited").detail["held"]
    assert starts(count) == 4


def test_an_unreachable_http_server_is_held_too(make_bridge: MakeBridge) -> None:
    bridge = make_bridge(backoff_after=1)
    with socket.socket() as sock:  # a port that was just free: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ok(bridge.add_server("gone", url=f"http://127.0.0.1:{port}/mcp"))
    first = error(bridge.list_tools("gone"), "connect_failed")
    assert "held" not in first.detail
    assert error(bridge.list_tools("gone"), "connect_failed").detail["held"] is True
