"""Placeholders on disk, recorded per bridge process so that a bridge that died leaves none behind.

On Linux every absent guarded path of a writable root (`.vscode`, `.envrc`, ...) is held by an
empty read-only mount point, which needs an empty dir or file on the host; `finish_launch` removes
it when the child ends. A bridge killed first (SIGKILL, OOM) never does, so each bridge process
keeps a ledger in the homes dir (hidden from children), `.placeholders/<pid>-<start time>.json`,
written before the spawn:

- `made`: the placeholders it created and has not removed yet, each with its device and inode;
- `mounted`: every guarded path its running children mount (placeholders and existing ones alike).

A made placeholder is removed (by its bridge when no child of its own mounts it any more; once its
bridge is dead, by `sweep` at a later bridge's start or by any bridge whose child ends) only while
it is the same inode, still empty, and no live bridge's child mounts it: removing a mount point
detaches that child's read-only mount, after which the child could create the path on the host.
So two bridges sharing a workspace never remove what the other's children hold, and a path a user
made, or made again after a crash (another inode), is never touched. One lock file orders ledger
updates and sweeps across processes.
"""

from __future__ import annotations

import fcntl
import functools
import json
import logging
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sandbox.policy import ROOT_GUARDED, Placeholder, PlaceholderKind, Policy

log = logging.getLogger("mcp_bridge.sandbox")

LEDGER_DIR = ".placeholders"
LOCK_FILE = ".lock"


@dataclass(frozen=True)
class Made:
    """A placeholder this bridge created: removable only while it is still this inode."""

    kind: PlaceholderKind
    dev: int
    ino: int


Entry = tuple[dict[Path, Made], set[Path]]  # a ledger's made placeholders and mounted paths


class Ledger:
    """This process's ledger under one homes dir. Call `hold` and `release` inside `locked()`."""

    def __init__(self, homes_dir: Path) -> None:
        self.dir = homes_dir / LEDGER_DIR
        self.path = self.dir / f"{_identity(os.getpid())}.json"
        self.made: dict[Path, Made] = {}
        self.mounted: dict[Path, int] = {}

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.dir.mkdir(mode=0o700, exist_ok=True)
        with _lock(self.dir):
            yield

    def hold(self, placeholders: Sequence[Placeholder], guarded: Sequence[Path]) -> None:
        """Before a spawn: create the absent placeholders (so their inodes are known), record them
        and the guarded paths the child will mount, and write the ledger."""
        for holder in placeholders:
            if holder.path not in self.made and (made := _create(holder)) is not None:
                self.made[holder.path] = made
        for path in guarded:
            self.mounted[path] = self.mounted.get(path, 0) + 1
        self._write()

    def release(self, guarded: Sequence[Path]) -> None:
        """After a child ended: forget its mounts, then remove every made placeholder that neither
        a child of ours nor one of another live bridge mounts (the rest is tried again next time),
        and what dead bridges made that no live child mounts any more."""
        for path in guarded:
            count = self.mounted.get(path, 0) - 1
            if count > 0:
                self.mounted[path] = count
            else:
                self.mounted.pop(path, None)
        dead, others = _survey(self.dir, besides=self.path)
        for path, made in list(self.made.items()):
            if path not in self.mounted and path not in others:
                _remove(path, made)
                del self.made[path]  # removed, or no longer the empty one we made: not ours
        self._write()
        # A bridge that ended while this child mounted its placeholders left them in its ledger.
        _sweep_dead(dead, others | set(self.mounted))

    def _write(self) -> None:
        if not self.made and not self.mounted:
            self.path.unlink(missing_ok=True)
            return
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(_encode(self.made, self.mounted)))
        partial.replace(self.path)


def guarded_paths(policy: Policy) -> tuple[Path, ...]:
    """The paths a child under `policy` may hold a mount on that a ledger must protect."""
    return tuple(root / name for root in policy.guarded_roots for name in ROOT_GUARDED)


@functools.cache
def ledger_for(homes_dir: Path) -> Ledger:
    return Ledger(homes_dir)


def sweep(homes_dir: Path) -> tuple[Path, ...]:
    """Remove the placeholders dead bridges made and no live bridge's child mounts; the removed."""
    directory = homes_dir / LEDGER_DIR
    if not directory.is_dir():
        return ()  # nothing recorded
    with _lock(directory):
        return _sweep_dead(*_survey(directory))


def _survey(directory: Path, *, besides: Path | None = None) -> tuple[dict[Path, Entry], set[Path]]:
    """Under the lock: the ledgers of bridges that have ended, and every path a live bridge's
    child mounts, leaving out the ledger `besides` (the caller's own)."""
    dead: dict[Path, Entry] = {}
    mounted: set[Path] = set()
    for path in directory.glob("*.json"):
        entry = _read(path) if path != besides else None
        if entry is None:
            continue
        if _alive(path.stem):
            mounted |= entry[1]
        else:
            dead[path] = entry
    return dead, mounted


def _sweep_dead(dead: dict[Path, Entry], live: set[Path]) -> tuple[Path, ...]:
    """Under the lock: remove what the `dead` ledgers made that no path in `live` is; a dead
    ledger goes once nothing in it is left to remove, entries a live child still mounts stay in
    it for a later sweep."""
    if _start_time(os.getpid()) is None:
        return ()  # no /proc to tell a live bridge from a dead one
    removed: list[Path] = []
    for path, (made, _) in dead.items():
        left = {p: m for p, m in made.items() if p in live}
        removed += [p for p, m in made.items() if p not in live and _remove(p, m)]
        if left:
            path.write_text(json.dumps(_encode(left, {})))
        else:
            path.unlink(missing_ok=True)
    if removed:
        log.info("removed %d placeholders left by bridges that have ended: %s", len(removed), ", ".join(map(str, removed)))
    return tuple(removed)


@contextmanager
def _lock(directory: Path) -> Iterator[None]:
    """Held for milliseconds (a plan, a few mkdirs), so a blocking flock is bounded."""
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _identity(pid: int) -> str:
    """`<pid>-<start time>`: a reused pid has another start time, so a dead ledger stays dead."""
    return f"{pid}-{_start_time(pid)}"


def _start_time(pid: int) -> str | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19]  # field 22, starttime; fields[0] is field 3


def _alive(identity: str) -> bool:
    pid, _, start = identity.partition("-")
    return pid.isdigit() and _start_time(int(pid)) == start


def _encode(made: dict[Path, Made], mounted: dict[Path, int] | set[Path]) -> dict[str, list[object]]:
    return {
        "made": [[str(p), m.kind, m.dev, m.ino] for p, m in made.items()],
        "mounted": [str(p) for p in mounted],
    }


def _read(path: Path) -> Entry | None:
    """A ledger's made placeholders and mounted paths, or None (logged) when it cannot be read."""
    try:
        data = json.loads(path.read_text())
        made = {Path(p): Made(kind, int(dev), int(ino)) for p, kind, dev, ino in data["made"]}
        return made, {Path(p) for p in data["mounted"]}
    except FileNotFoundError:
        return None  # its bridge just removed it
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("placeholder ledger %s left alone: unreadable (%s)", path, exc)
        return None


def _create(holder: Placeholder) -> Made | None:
    """Make the empty dir or file bwrap mounts over; None when it is not ours to remove later."""
    try:
        if holder.kind == "dir":
            os.mkdir(holder.path, 0o755)
            info = os.lstat(holder.path)
        else:
            fd = os.open(holder.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            try:
                info = os.fstat(fd)
            finally:
                os.close(fd)
    except FileExistsError:
        return None  # made by someone else since the plan: theirs, never removed
    except OSError as exc:
        log.info("placeholder %s not made: %s (bwrap will say why the mount fails)", holder.path, exc.strerror)
        return None
    return Made(holder.kind, info.st_dev, info.st_ino)


def _remove(path: Path, made: Made) -> bool:
    """Remove `path` if it is still the empty placeholder `made` describes."""
    try:
        info = os.lstat(path)
        if (info.st_dev, info.st_ino) != (made.dev, made.ino):
            return False
        if made.kind == "dir" and stat.S_ISDIR(info.st_mode):
            os.rmdir(path)  # fails (and is left) when someone put something in it
            return True
        if made.kind == "file" and stat.S_ISREG(info.st_mode) and info.st_size == 0:
            os.unlink(path)
            return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        log.info("placeholder %s left in place: %s", path, exc.strerror)
    return False
