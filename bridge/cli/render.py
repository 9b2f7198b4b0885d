"""Plain-text tables for a terminal; `--json` output is the same data, machine-readable."""

from __future__ import annotations

from collections.abc import Sequence


def table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    """Left-aligned columns two spaces apart; the last column is never padded."""
    lines = [header, *rows] if header else list(rows)
    widths = [max(len(line[index]) for line in lines) for index in range(len(lines[0]) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(line, widths)), line[-1]]).rstrip() for line in lines
    )
