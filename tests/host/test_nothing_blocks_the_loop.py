"""Nothing slow runs on the loop that serves the host: an audit lock another process holds for long
delays no call (the audit waits on its own thread), and every entry is still written afterwards."""

from __future__ import annotations

import json
import select
import subprocess
from pathlib import Path
from typing import Any

import portalocker
from bridge_proc import BRIDGE, host_env, initialize_params

from bridge.tools.audit import LOCK_TIMEOUT_S

ANSWER_WITHIN_S = LOCK_TIMEOUT_S / 2  # a call that waited for the lock on the loop would take LOCK_TIMEOUT_S


def ask(proc: subprocess.Popen[bytes], request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """Send one request; its answer, or None when none came within `ANSWER_WITHIN_S`."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n")
    proc.stdin.flush()
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], ANSWER_WITHIN_S)
        if not ready:
            return None
        message = json.loads(proc.stdout.readline())
        if message.get("id") == request_id:
            return message


def test_calls_are_answered_while_another_process_holds_the_audit_lock(dirs: dict[str, str]) -> None:
    audit = Path(dirs["MCP_STATE_DIR"]) / "audit"
    audit.mkdir(parents=True)
    proc = subprocess.Popen([BRIDGE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=host_env(dirs))
    try:
        assert ask(proc, 0, "initialize", initialize_params("2025-11-25")) is not None
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')  # type: ignore[union-attr]
        with portalocker.Lock(audit / "audit.lock", timeout=0):
            answers = [ask(proc, i, "tools/call", {"name": "mcp_list_tools", "arguments": {}}) for i in range(1, 6)]
        assert all(answer is not None and "result" in answer for answer in answers), answers
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=60)
    # Closing the bridge wrote what waited (the lock was released before the log gave up on it).
    lines = (audit / "audit.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in lines] == ["mcp_list_tools"] * 5
