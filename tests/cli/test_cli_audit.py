"""`mcp-bridge audit`: the audit log for a time range as JSON lines; CLI changes are audited too."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from cli_support import RunCli


def entries(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


def test_exports_the_calls_in_a_time_range_oldest_first(cli: RunCli) -> None:
    assert cli("servers", "add", "one", "--url", "https://one.example/mcp").code == 0
    between = datetime.now(UTC).isoformat()
    assert cli("servers", "add", "two", "--url", "https://two.example/mcp").code == 0
    assert cli("servers", "remove", "nope").code == 3

    everything = entries(cli("audit").out)
    assert [(entry["tool"], entry["server"], entry["outcome"]) for entry in everything] == [
        ("mcp_add_server", "one", "ok"),
        ("mcp_add_server", "two", "ok"),
        ("mcp_remove_server", "nope", "unknown_server"),
    ]
    assert {entry["caller"] for entry in everything} == {"cli"}
    assert [entry["server"] for entry in entries(cli("audit", "--until", between).out)] == ["one"]
    assert [entry["server"] for entry in entries(cli("audit", "--since", between).out)] == ["two", "nope"]


def test_naive_times_are_utc(cli: RunCli) -> None:
    cli("servers", "add", "one", "--url", "https://one.example/mcp")
    now = datetime.now(UTC)
    naive_after = now.replace(tzinfo=None).isoformat()
    assert cli("audit", "--until", naive_after).out.count("\n") == 1
    assert cli("audit", "--since", naive_after).out == ""


def test_an_empty_log_prints_nothing(cli: RunCli) -> None:
    ran = cli("audit")
    assert (ran.code, ran.out) == (0, "")


def test_since_after_until_is_a_usage_error(cli: RunCli) -> None:
    ran = cli("audit", "--since", "2026-12-02", "--until", "2026-12-01T00:00:00+00:00")
    assert ran.code == 2 and "--since must be earlier than --until" in ran.err
