"""The audit trail: one JSON line per tool call, what and how it ended, never with which secrets."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from bridge_support import BridgeDirs, MakeBridge, StdioArgs, error, ok

from bridge.tools import Bridge, audit
from bridge.tools.audit import FILE_NAME, AuditEntry, AuditLog, read_entries

SECRET = "s3cr3t-header-value-never-logged"
ARGUMENT = "argument-value-never-logged"


def entry(call_id: str, time: datetime | None = None) -> AuditEntry:
    """One finished call, as the log's own tests write them."""
    return AuditEntry(time=time or datetime.now(UTC), call_id=call_id, tool="t", duration_ms=1, outcome="ok")


def lines(dirs: BridgeDirs) -> list[dict]:
    return [json.loads(line) for line in (dirs.state / "audit" / FILE_NAME).read_text().splitlines()]


def test_every_tool_call_is_one_line_with_what_was_done_and_how_it_ended(
    bridge: Bridge, bridge_dirs: BridgeDirs, stdio_args: StdioArgs
) -> None:
    arguments = json.dumps({"text": ARGUMENT})
    ok(bridge.add_server("echo", command=sys.executable, args_json=stdio_args("echo")))
    ok(bridge.list_tools("echo"))
    ok(bridge.call_tool("echo", "echo", arguments))
    error(bridge.call_tool("echo", "fail", '{"message": "no"}'), "tool_error")
    error(bridge.call_tool("nope", "echo", "{}"), "unknown_server")
    ok(bridge.remove_server("echo"))

    entries = lines(bridge_dirs)
    assert [(e["tool"], e["server"], e["downstream_tool"], e["outcome"]) for e in entries] == [
        ("mcp_add_server", "echo", None, "ok"),
        ("mcp_list_tools", "echo", None, "ok"),
        ("mcp_call_tool", "echo", "echo", "ok"),
        ("mcp_call_tool", "echo", "fail", "tool_error"),
        ("mcp_call_tool", "nope", "echo", "unknown_server"),
        ("mcp_remove_server", "echo", None, "ok"),
    ]
    assert entries[2]["argument_bytes"] == len(arguments)
    assert {e["caller"] for e in entries} == {"host"}
    assert len({e["call_id"] for e in entries}) == len(entries)
    assert all(e["duration_ms"] >= 0 and datetime.fromisoformat(e["time"]).tzinfo for e in entries)
    assert ARGUMENT not in (bridge_dirs.state / "audit" / FILE_NAME).read_text()


def test_header_values_never_reach_the_log(bridge: Bridge, bridge_dirs: BridgeDirs) -> None:
    headers = json.dumps({"Authorization": f"Bearer {SECRET}"})
    ok(bridge.add_server("remote", url="http://127.0.0.1:9/mcp", headers_json=headers))
    bridge.list_tools("remote")
    error(bridge.add_server("bad", url="ftp://example.com", headers_json=headers), "invalid_argument")
    text = (bridge_dirs.state / "audit" / FILE_NAME).read_text()
    assert len(text.splitlines()) == 3
    assert SECRET not in text


def test_the_log_is_bounded_by_rotation_and_keeps_the_newest(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    bridge = make_bridge(audit_max_bytes=10_000, audit_backups=2)
    for index in range(300):  # about 250 bytes each: several rotations
        error(bridge.call_tool(f"server-{index}", "tool", "{}"), "unknown_server")
    files = sorted(path.name for path in (bridge_dirs.state / "audit").glob(f"{FILE_NAME}*"))
    assert files == [FILE_NAME, f"{FILE_NAME}.1", f"{FILE_NAME}.2"]
    assert all((bridge_dirs.state / "audit" / name).stat().st_size <= 10_000 for name in files)
    kept = list(read_entries(bridge_dirs.state / "audit"))
    assert kept[-1]["server"] == "server-299"
    assert [e["server"] for e in kept] == [f"server-{i}" for i in range(300 - len(kept), 300)]  # oldest first, no gap


def test_two_processes_appending_at_once_lose_no_line(bridge_dirs: BridgeDirs) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        from datetime import datetime, timezone
        from pathlib import Path
        from bridge.tools.audit import AuditEntry, AuditLog
        log = AuditLog(Path({str(bridge_dirs.state / "audit")!r}), max_bytes=2_000, backups=1000)
        for index in range(200):
            log.record(AuditEntry(time=datetime.now(timezone.utc), call_id=f"{{sys.argv[1]}}-{{index}}",
                                  tool="mcp_call_tool", duration_ms=0.0, outcome="ok"))
        """
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, name]) for name in ("a", "b", "c")]
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0]
    ids = [entry["call_id"] for entry in read_entries(bridge_dirs.state / "audit")]
    assert sorted(ids) == sorted(f"{name}-{index}" for name in "abc" for index in range(200))
    for name in "abc":  # each writer's own lines stay in order across rotations
        assert [i for i in ids if i.startswith(f"{name}-")] == [f"{name}-{index}" for index in range(200)]


def test_export_takes_a_time_range_and_skips_a_torn_line(bridge_dirs: BridgeDirs) -> None:
    log = AuditLog(bridge_dirs.state / "audit", max_bytes=1_000_000, backups=1)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for hour in range(5):
        log.record(entry(str(hour), start + timedelta(hours=hour)))
    log.close()
    with (bridge_dirs.state / "audit" / FILE_NAME).open("a") as torn:
        torn.write('{"time": "2026-01-01T0')
    picked = read_entries(bridge_dirs.state / "audit", since=start + timedelta(hours=1), until=datetime(2026, 1, 1, 4))
    assert [entry["call_id"] for entry in picked] == ["1", "2", "3"]


def test_an_unwritable_log_never_fails_a_tool_call(make_bridge: MakeBridge, bridge_dirs: BridgeDirs) -> None:
    (bridge_dirs.state / "audit").write_text("a file where the audit directory should be")
    bridge = make_bridge()
    error(bridge.call_tool("nope", "tool", "{}"), "unknown_server")
    assert ok(bridge.list_tools()).data.servers == []


def test_the_log_file_is_private(bridge: Bridge, bridge_dirs: BridgeDirs) -> None:
    bridge.list_tools()
    assert (Path(bridge_dirs.state) / "audit" / FILE_NAME).stat().st_mode & 0o777 == 0o600


def test_a_burst_of_calls_is_appended_under_one_lock_not_one_each(
    bridge_dirs: BridgeDirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each lock, open and writer wake-up per call cost a warm call ~0.35 ms of CPU."""
    taken: list[object] = []
    real_lock = audit.portalocker.Lock

    def counting_lock(*args: object, **kwargs: object) -> object:
        taken.append(args[0])
        return real_lock(*args, **kwargs)

    monkeypatch.setattr(audit.portalocker, "Lock", counting_lock)
    log = AuditLog(bridge_dirs.state / "audit", max_bytes=1_000_000, backups=1)
    for index in range(50):
        log.record(entry(str(index)))
    log.close()
    assert [entry["call_id"] for entry in read_entries(bridge_dirs.state / "audit")] == [str(i) for i in range(50)]
    assert 1 <= len(taken) <= 5


def test_a_batch_that_crosses_the_size_bound_rotates_in_its_middle(bridge_dirs: BridgeDirs) -> None:
    log = AuditLog(bridge_dirs.state / "audit", max_bytes=1_000, backups=5)
    for index in range(20):  # ~150 bytes each, all in one batch: three files or more
        log.record(entry(str(index)))
    log.close()
    files = list((bridge_dirs.state / "audit").glob(f"{FILE_NAME}*"))
    assert len(files) >= 3 and all(path.stat().st_size <= 1_000 for path in files)
    assert [entry["call_id"] for entry in read_entries(bridge_dirs.state / "audit")] == [str(i) for i in range(20)]
