"""The audit trail: one JSON line per tool call under `<state_dir>/audit/`, bounded by rotation.

Several bridge processes may share a state dir (Claude Desktop and an HTTP connector at once), so
each append and each rotation happens under an inter-process lock; `audit.jsonl` rotates to
`audit.jsonl.1` ... `audit.jsonl.<backups>` and the oldest file is dropped. An entry says what was
done and how it ended, never with what: argument values, header values and env values stay out.

Appends happen on a writer thread of their own: the lock may be held by another process for up to
`LOCK_TIMEOUT_S`, and the loop that serves the host must never wait for it. `record` only queues.
The writer gathers what arrives within `LINGER_S` of a first entry and appends it under one lock
in one write: waking a thread, locking and opening the file per call cost a warm call ~0.35 ms of
CPU. `flush` (a sync caller waiting for its line) and `close` cut the wait short.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import portalocker
from pydantic import BaseModel, Field

logger = logging.getLogger("mcp_bridge.audit")

FILE_NAME = "audit.jsonl"
LOCK_TIMEOUT_S = 5.0
LINGER_S = 0.02


class AuditEntry(BaseModel):
    """One tool call (`outcome`: "ok" or the error code), or one thing the sandbox saw at a
    session's end (`caller` "sandbox", e.g. a `new_git_repository` at `path`)."""

    time: datetime
    call_id: str
    caller: str = Field("host", description="Who made the call: the host's model, or the CLI.")
    tool: str
    server: str | None = None
    downstream_tool: str | None = None
    argument_bytes: int = 0
    duration_ms: float
    outcome: str
    path: str | None = Field(None, description="A host path the entry is about (a .git a child created).")


class AuditLog:
    """Appends entries to `directory/audit.jsonl`, keeping at most `max_bytes` per file."""

    def __init__(self, directory: Path, *, max_bytes: int, backups: int) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self.max_bytes = max_bytes
        self.backups = backups
        self._queue: queue.Queue[AuditEntry | None] = queue.Queue()
        self._writer: threading.Thread | None = None
        self._start = threading.Lock()
        self._hurry = threading.Event()  # set while someone waits for the queue to be written

    def record(self, entry: AuditEntry) -> None:
        """Queue one entry for the writer thread; never blocks, never raises into a tool call."""
        if self._writer is None:
            with self._start:
                if self._writer is None:
                    self._writer = threading.Thread(target=self._drain, name="mcp-bridge-audit", daemon=True)
                    self._writer.start()
                    atexit.register(self.close)  # a process that never closes the log loses no line
        self._queue.put(entry)

    def flush(self) -> None:
        """Wait until every queued entry is written (or given up on)."""
        if self._writer is not None:
            self._hurry.set()
            self._queue.join()
            self._hurry.clear()  # a concurrent flush may now wait up to LINGER_S longer, no more

    def close(self) -> None:
        """Write what is queued and stop the writer thread."""
        with self._start:
            writer, self._writer = self._writer, None
        if writer is not None:
            atexit.unregister(self.close)
            self._hurry.set()
            self._queue.put(None)
            writer.join()

    def _drain(self) -> None:
        done = False
        while not done:
            batch = [self._queue.get()]
            self._hurry.wait(LINGER_S)
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())  # the only consumer: never raises Empty
            entries = [entry for entry in batch if entry is not None]
            done = len(entries) < len(batch)
            try:
                if entries:
                    self._append(entries)
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _append(self, entries: list[AuditEntry]) -> None:
        """Append one line per entry; a full disk or a stuck lock is logged, never raised."""
        lines = [(entry.model_dump_json() + "\n").encode() for entry in entries]
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            with portalocker.Lock(self.directory / "audit.lock", timeout=LOCK_TIMEOUT_S):
                size = self._size()
                start = 0
                for end, line in enumerate(lines):
                    if size + len(line) > self.max_bytes:
                        self._write(lines[start:end])
                        self._rotate()
                        size, start = 0, end
                    size += len(line)
                self._write(lines[start:])
        except (OSError, portalocker.exceptions.LockException) as exc:
            logger.warning("%d audit entries not written (%s): %s", len(lines), type(exc).__name__, exc)

    def _write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, b"".join(lines))
        finally:
            os.close(fd)

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def _rotate(self) -> None:
        for index in range(self.backups, 0, -1):
            older = self.directory / f"{FILE_NAME}.{index}"
            newer = self.directory / (f"{FILE_NAME}.{index - 1}" if index > 1 else FILE_NAME)
            if newer.exists():
                os.replace(newer, older)
        if self.backups == 0:
            self.path.unlink(missing_ok=True)


def read_entries(
    directory: Path, since: datetime | None = None, until: datetime | None = None
) -> Iterator[dict[str, Any]]:
    """Entries with `since <= time < until`, oldest first; naive bounds are taken as UTC.

    Lines that do not parse (a torn last line after a crash) are skipped with a warning.
    """
    rotated = [path for path in directory.glob(f"{FILE_NAME}.*") if path.suffix[1:].isdigit()]
    rotated.sort(key=lambda path: int(path.suffix[1:]), reverse=True)  # the highest number is the oldest
    low, high = _utc(since), _utc(until)
    for path in [*rotated, directory / FILE_NAME]:
        if not path.is_file():
            continue
        with path.open(encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, start=1):
                try:
                    entry = json.loads(line)
                    when = _utc(datetime.fromisoformat(entry["time"]))
                except (ValueError, KeyError, TypeError):
                    logger.warning("skipping unreadable audit line %s:%d", path.name, number)
                    continue
                if (low is None or when >= low) and (high is None or when < high):
                    yield entry


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)
