"""Git repositories inside writable roots: where their git dirs are, and which appeared later.

The host runs what a git dir holds (hooks, `core.fsmonitor` and friends in config, a `commondir`
that points at another config), so every git dir reachable from a writable root is mounted
read-only. A repository a child creates below the root (`git init sub`) cannot be stopped by a
mount made before it existed, so `new_git_dirs` compares a rescan with the spawn-time scan.

The scan is breadth-first at any depth, `node_modules` included, and bounded only by a folder
count (`MCP_SANDBOX_SCAN_MAX_DIRS`). The bound fails closed: a root whose scan meets it is refused
(`ScanBound`, naming the bound and the setting), never left writable with a repository unfound.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from pathlib import Path

from sandbox.errors import InvalidWorkspace

SCAN_MAX_DIRS = 20_000  # ~20 µs a folder warm here: ~0.4 s at the bound, once per burst of spawns

log = logging.getLogger("mcp_bridge.sandbox")


class ScanBound(InvalidWorkspace):
    """A writable root holds more folders than the scan may visit; `found` is what it saw."""

    def __init__(self, root: Path, max_dirs: int, found: frozenset[Path]) -> None:
        super().__init__(
            f"{root} holds more than {max_dirs} folders, so the sandbox cannot find every git "
            "repository in it to keep read-only (the host's git would run what a child wrote in one "
            "it missed); raise MCP_SANDBOX_SCAN_MAX_DIRS, or use a smaller workspace or write path"
        )
        self.found = found


def find_dot_gits(root: Path, *, max_dirs: int = SCAN_MAX_DIRS) -> frozenset[Path]:
    """Every `.git` (dir, file or symlink) at any depth below `root`, itself included.

    Raises `ScanBound` when `root` holds more than `max_dirs` folders.
    """
    found: set[Path] = set()
    level, visited = [str(root)], 0
    while level:
        below: list[str] = []
        for folder in level:
            visited += 1
            if visited > max_dirs:
                raise ScanBound(root, max_dirs, frozenset(found))
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name == ".git":
                    found.add(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False):
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


def scan_roots(roots: Iterable[Path], *, max_age: float = 0.0, max_dirs: int = SCAN_MAX_DIRS) -> frozenset[Path]:
    """The union of `find_dot_gits` over several roots; a scan younger than `max_age` s is reused.

    Reuse covers a burst of spawns in one workspace; `new_git_dirs` always rescans and refreshes.
    Raises `ScanBound` (never cached) for a root with more than `max_dirs` folders.
    """
    found: set[Path] = set()
    now = time.monotonic()
    for root in roots:
        cached = _scans.get((root, max_dirs))
        if cached is None or now - cached[0] > max_age:
            cached = (now, find_dot_gits(root, max_dirs=max_dirs))
            _scans[(root, max_dirs)] = cached
        found |= cached[1]
    return frozenset(found)


_scans: dict[tuple[Path, int], tuple[float, frozenset[Path]]] = {}


def new_git_dirs(roots: Iterable[Path], before: frozenset[Path], *, max_dirs: int = SCAN_MAX_DIRS) -> tuple[Path, ...]:
    """`.git` entries under `roots` now that were not there in the spawn-time scan `before`.

    A root that grew past the bound while the child ran is reported with what the rescan saw; the
    next spawn refuses it (`ScanBound`) until it shrinks or the bound is raised.
    """
    found: set[Path] = set()
    for root in roots:
        try:
            found |= scan_roots((root,), max_dirs=max_dirs)  # max_age 0: always a fresh scan
        except ScanBound as exc:
            log.warning("%s", exc)
            found |= exc.found
    return tuple(sorted(found - before))
