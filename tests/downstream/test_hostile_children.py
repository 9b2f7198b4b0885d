"""Hostile stdio children, as a matrix: each real, sandboxed fixture child misbehaves one way, and the
call must end with the right code within MCP_TIMEOUT (MCP_START_TIMEOUT is set to the same here) plus
a grace, leaving no process behind.

Processes are counted twice: every living descendant of this test process (the sandbox, the child
and whatever it forked), and every process carrying the row's marker argument (which also finds a
grandchild that escaped to init). Peak memory is measured on a real bridge process, through which a
20 MB answer and an endless stderr flood go.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass

import pytest
from bridge_support import MakeBridge, error, ok
from helpers import descendants, fixture_path, pids_with_marker, wait_pids_gone
from hostile_support import (
    BOUND_S,
    GONE_WITHIN_S,
    PEAK_RSS_BOUND_MIB,
    TIMEOUT_S,
    peak_rss_mib,
    real_bridge,
    timed,
)

from bridge.errors import ErrorResult


@dataclass(frozen=True)
class Child:
    """One row: how the child is started, what is called, and what must come back."""

    argv: tuple[str, ...]  # fixture script (or absolute program) and its arguments; the marker is appended
    code: str | None  # the expected error code; None: the call succeeds
    says: str = ""  # a phrase the error message must carry
    tool: str = "echo"
    marked: bool = True  # False: the program would choke on an extra argument

    def args(self, marker: str) -> tuple[str, str]:
        """(command, args_json) for mcp_add_server."""
        program, *rest = self.argv
        if program.startswith("/"):
            command, args = program, rest
        else:
            command, args = sys.executable, [fixture_path(program), *rest]
        return command, json.dumps([*args, marker] if self.marked else args)


CAT = shutil.which("cat") or "/bin/cat"

MATRIX = {
    "hangs-and-ignores-sigterm": Child(("hang",), "timeout", "did not start within 3 s (MCP_START_TIMEOUT)"),
    "crashes-during-initialize": Child(
        ("hostile_stdio", "crash-in-initialize"), "child_exited", "crashed while initializing"
    ),
    "prints-non-json": Child(("hostile_stdio", "not-json"), "protocol_error", "not JSON-RPC"),
    "prints-json-that-is-not-json-rpc": Child(("hostile_stdio", "not-jsonrpc"), "protocol_error", "not JSON-RPC"),
    "answers-under-wrong-ids": Child(("hostile_stdio", "wrong-id"), "protocol_error", "ids the bridge never sent"),
    "answers-with-the-wrong-shape": Child(("hostile_stdio", "wrong-shape"), "protocol_error", "not valid MCP"),
    "echoes-every-request-back": Child((CAT, "-"), "protocol_error", marked=False),
    "sends-a-20-mb-result": Child(("hostile_stdio", "huge"), "protocol_error", "over 16 MiB", tool="huge"),
    "floods-stderr-without-end": Child(("hostile_stdio", "stderr-flood"), None),
    "forks-a-sigterm-deaf-grandchild-and-hangs": Child(("forking",), "timeout", "did not start within 3 s (MCP_START_TIMEOUT)"),
    "forks-an-escaping-grandchild-and-exits": Child(
        ("hostile_stdio", "fork-and-exit"), "child_exited", "code 5. Last stderr: fork-and-exit: grandchild started"
    ),
}


@pytest.mark.parametrize("child", MATRIX.values(), ids=MATRIX.keys())
def test_a_hostile_child_gets_its_code_in_bounded_time_and_leaves_no_process(
    make_bridge: MakeBridge, marker: str, child: Child
) -> None:
    bridge = make_bridge(timeout=TIMEOUT_S, start_timeout=TIMEOUT_S)
    command, args_json = child.args(marker)
    ok(bridge.add_server("hostile", command=command, args_json=args_json))
    before = descendants(os.getpid())

    reply, elapsed = timed(lambda: bridge.call_tool("hostile", child.tool, '{"text": "hi"}'))
    if child.code is None:
        assert ok(reply).text == "handshake-era: hi"
        ok(bridge.remove_server("hostile"))  # a working child stays warm until its entry goes
    else:
        data = error(reply, child.code)
        assert child.says in data.message
    left = wait_pids_gone(descendants(os.getpid()) - before, GONE_WITHIN_S)
    marked = wait_pids_gone(pids_with_marker(marker), GONE_WITHIN_S)

    print(f"{child.code or 'ok'} in {elapsed:.2f} s; processes before {len(before)}, left {len(left | marked)}")
    assert elapsed < BOUND_S
    assert left == set() and marked == set()


def test_a_child_the_bridge_had_to_kill_is_not_reported_as_exited(make_bridge: MakeBridge, marker: str) -> None:
    """The child is killed because its answer is not MCP; its -9 is the bridge's doing, not a crash."""
    bridge = make_bridge(timeout=TIMEOUT_S, start_timeout=TIMEOUT_S)
    command, args_json = MATRIX["answers-with-the-wrong-shape"].args(marker)
    ok(bridge.add_server("shapeless", command=command, args_json=args_json))
    data = error(bridge.list_tools("shapeless"), "protocol_error")
    assert "exit_code" not in data.detail
    assert "InitializeResult" in data.message


def test_an_oversized_answer_kills_the_child_and_the_next_call_gets_a_fresh_one(make_bridge: MakeBridge, marker: str) -> None:
    bridge = make_bridge(timeout=TIMEOUT_S, start_timeout=TIMEOUT_S)
    command, args_json = MATRIX["sends-a-20-mb-result"].args(marker)
    ok(bridge.add_server("big", command=command, args_json=args_json))
    assert ok(bridge.call_tool("big", "echo", '{"text": "warm"}')).text == "handshake-era: warm"
    first = pids_with_marker(marker)
    assert first

    error(bridge.call_tool("big", "huge"), "protocol_error")
    assert wait_pids_gone(first, GONE_WITHIN_S) == set()
    assert ok(bridge.call_tool("big", "echo", '{"text": "fresh"}')).text == "handshake-era: fresh"
    assert pids_with_marker(marker).isdisjoint(first)


def test_a_real_bridge_stays_small_through_a_20_mb_answer_and_an_endless_stderr_flood(marker: str) -> None:
    with real_bridge() as bridge:
        for name, mode in (("big", "huge"), ("flood", "stderr-flood")):
            bridge.add(name, command=sys.executable, args_json=json.dumps([fixture_path("hostile_stdio"), mode, marker]))

        flooded, _ = bridge.call("flood", "echo", {"text": "through the flood"})
        huge, elapsed = bridge.call("big", "huge")
        after, _ = bridge.call("big", "echo", {"text": "after"})
        again, _ = bridge.call("flood", "echo", {"text": "still flooding"})  # the flood ran all along
        peak = peak_rss_mib(bridge.pid)
        children = descendants(bridge.pid)
        for name in ("big", "flood"):
            bridge.tool("mcp_remove_server", name=name)
        left = wait_pids_gone(descendants(bridge.pid) | pids_with_marker(marker), GONE_WITHIN_S)

    print(f"peak RSS {peak:.1f} MiB; processes while warm {len(children)}, left {len(left)}")
    assert flooded["text"] == "handshake-era: through the flood"
    assert ErrorResult.model_validate(huge).code == "protocol_error" and elapsed < BOUND_S
    assert (after["text"], again["text"]) == ("handshake-era: after", "handshake-era: still flooding")
    assert peak < PEAK_RSS_BOUND_MIB, f"peak RSS {peak:.0f} MiB"
    assert children and left == set()
