"""`mcp-bridge audit`: the audit log for a time range, one JSON object per line on stdout."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from bridge.cli.context import load_settings
from bridge.cli.errors import CliError, add_command
from bridge.tools.audit import read_entries
from bridge.wording import escaped


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = add_command(
        commands,
        "audit",
        "export the audit log",
        "Print the audit log's entries with SINCE <= time < UNTIL, oldest first, one JSON object per\n"
        "line (what was called and how it ended; never argument, header or env values). Times are\n"
        "ISO 8601 (2026-12-01, 2026-12-01T09:30:00+01:00); without an offset they are UTC.\n\n"
        "  mcp-bridge audit --since 2026-12-01 --until 2026-12-02 | jq -c 'select(.outcome != \"ok\")'",
    )
    audit.add_argument("--since", type=_moment, help="the first moment included (default: the oldest entry)")
    audit.add_argument("--until", type=_moment, help="the first moment excluded (default: now)")
    audit.set_defaults(run=export)


def _moment(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None


def export(args: argparse.Namespace) -> int:
    if args.since and args.until and _aware(args.since) >= _aware(args.until):
        raise CliError("--since must be earlier than --until")
    settings = load_settings()
    for entry in read_entries(settings.audit_dir, args.since, args.until):
        print(escaped(json.dumps(entry, ensure_ascii=False)))  # JSON leaves C1 and U+202E as they are
    return 0


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
