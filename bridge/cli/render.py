"""Plain-text tables for a terminal; `--json` output is the same data, machine-readable. A cell
is shown escaped: a server's or a tool's name cannot forge a row or drive the terminal."""

from __future__ import annotations

from collections.abc import Sequence

from bridge.wording import escaped


def table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    """Left-aligned columns two spaces apart; the last column is never padded."""
    lines = [[escaped(cell) for cell in line] for line in ([header, *rows] if header else rows)]
    widths = [max(len(line[index]) for line in lines) for index in range(len(lines[0]) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(line, widths)), line[-1]]).rstrip() for line in lines
    )
