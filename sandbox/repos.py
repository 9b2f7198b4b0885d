"""Git repositories inside writable roots: where their git dirs are, and which appeared later.

The host runs what a git dir holds (hooks, `core.fsmonitor` and friends in config, a `commondir`
that points at another config), so every git dir reachable from a writable root is mounted
read-only. A repository a child creates below the root (`git init sub`) cannot be stopped by a
mount made before it existed, so `new_git_dirs` compares a rescan with the spawn-time scan.

The scan is breadth-first and bounded (depth and directory count) so a huge tree costs little;
a repository deeper than the bound is neither protected nor reported.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

SCAN_DEPTH = 4
SCAN_MAX_DIRS = 1000  # ~30 µs a directory warm: the worst case stays near 30 ms
SKIP_DIRS = frozenset({".git", "node_modules"})


def find_dot_gits(root: Path, *, depth: int = SCAN_DEPTH, max_dirs: int = SCAN_MAX_DIRS) -> frozenset[Path]:
    """Every `.git` (dir, file or symlink) at most `depth` levels below `root`, itself included."""
    found: set[Path] = set()
    level, visited = [str(root)], 0
    for _ in range(depth + 1):
        below: list[str] = []
        for folder in level:
            visited += 1
            if visited > max_dirs:
                return frozenset(found)
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name == ".git":
                    found.add(Path(entry.path))
                elif entry.name not in SKIP_DIRS and entry.is_dir(follow_symlinks=False):
                    below.append(entry.path)
        level = below
    return frozenset(found)


def git_dirs(dot_git: Path) -> list[Path]:
    """What to keep read-only for one `.git`: itself, a `gitdir:` target and its `commondir`."""
    targets = [dot_git]
    gitdir = dot_git
    if dot_git.is_file():
        pointed = _gitdir_pointer(dot_git)
        if pointed is None:
            return targets
        gitdir = pointed
        targets.append(gitdir)
    common = _commondir(gitdir)
    if common is not None:
        targets.append(common)
    return targets


def _gitdir_pointer(dot_git_file: Path) -> Path | None:
    try:
        text = dot_git_file.read_text(errors="replace")[:4096]
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    if not target.is_absolute():
        target = dot_git_file.parent / target
    real = Path(os.path.realpath(target))
    return real if real.is_dir() else None


def _commondir(gitdir: Path) -> Path | None:
    try:
        text = (gitdir / "commondir").read_text(errors="replace")[:4096].strip()
    except OSError:
        return None
    target = Path(text) if os.path.isabs(text) else gitdir / text
    real = Path(os.path.realpath(target))
    return real if real.is_dir() else None


def scan_roots(roots: Iterable[Path], *, max_age: float = 0.0) -> frozenset[Path]:
    """The union of `find_dot_gits` over several roots; a scan younger than `max_age` s is reused.

    Reuse covers a burst of spawns in one workspace; `new_git_dirs` always rescans and refreshes.
    """
    found: set[Path] = set()
    now = time.monotonic()
    for root in roots:
        cached = _scans.get(root)
        if cached is None or now - cached[0] > max_age:
            cached = (now, find_dot_gits(root))
            _scans[root] = cached
        found |= cached[1]
    return frozenset(found)


_scans: dict[Path, tuple[float, frozenset[Path]]] = {}


def new_git_dirs(roots: Iterable[Path], before: frozenset[Path]) -> tuple[Path, ...]:
    """`.git` entries under `roots` now that were not there in the spawn-time scan `before`."""
    return tuple(sorted(scan_roots(roots) - before))  # max_age 0: always a fresh scan
