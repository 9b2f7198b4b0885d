"""The kept catalog index: every server's tool list, so a search needs no server running.

One SQLite file in the state directory (`catalog/index.sqlite3`), shared by every bridge process:
WAL mode lets readers go on while one process writes, a write is one transaction (a crash leaves
the old part or the new one), and SQLite's own locks order writers across processes. Each server's
*part* is keyed on the registry entry it was listed from (a digest of name and spec): a part whose
entry changed or went away is dropped, never searched. The tools' text is kept analysed (by
`bridge.tools.search`) in an FTS5 table, whose `bm25()` ranks a query in well under a millisecond
over thousands of tools, cold or warm: nothing is loaded into the process to search.

The file is a cache: one that cannot be opened or was written by another analysis version is
rebuilt empty, and the next search lists the servers again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bridge.models import ServerSpec

logger = logging.getLogger("mcp_bridge.store")

# The analysed text columns, in the order `bm25()` takes their weights.
COLUMNS = ("name", "description", "parameters", "server_name", "related")
_BUSY_MS = 5000


@dataclass(frozen=True)
class Part:
    """What is kept of one server: the entry it was listed from, when, and until when it holds."""

    entry: str
    listed_at: float
    expires_at: float | None  # from the list's ttlMs; None: until the server says it changed


@dataclass(frozen=True)
class Document:
    """One tool as kept: its definition (JSON, as the server sent it) and its analysed fields."""

    tool: str
    definition: str
    fields: Mapping[str, str]


@dataclass(frozen=True)
class Hit:
    server: str
    tool: str
    definition: str
    score: float


def entry_key(name: str, spec: ServerSpec) -> str:
    """The digest a part is kept under: the name and the registry entry as written (header secrets
    stay `${env:...}` references), so any change to either drops the part."""
    text = json.dumps([name, spec.model_dump(mode="json", exclude={"registered_by"})], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class Catalog:
    """The index file. Thread-safe; each method is one short transaction (call it off the event loop)."""

    def __init__(self, path: Path, version: int) -> None:
        """`version` names the analysis that wrote the text: a file of another version is rebuilt."""
        self.path = path
        self.version = version
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                self._db = self._connect()
            except sqlite3.DatabaseError as exc:  # not a database, or one this SQLite cannot read
                logger.warning("rebuilding the catalog index %s: %s", self.path, exc)
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                self._db = self._connect()
        return self._db

    def _connect(self) -> sqlite3.Connection:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.close(fd)
        db = sqlite3.connect(self.path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            with _transaction(db):  # checked under the write lock: another process may be creating it
                if db.execute("PRAGMA user_version").fetchone()[0] != self.version:
                    db.execute("DROP TABLE IF EXISTS parts")
                    db.execute("DROP TABLE IF EXISTS tools")
                    db.execute(
                        "CREATE TABLE parts (server TEXT PRIMARY KEY, entry TEXT NOT NULL, "
                        "listed_at REAL NOT NULL, expires_at REAL)"
                    )
                    db.execute(
                        "CREATE VIRTUAL TABLE tools USING fts5(server UNINDEXED, tool UNINDEXED, "
                        f"definition UNINDEXED, {', '.join(COLUMNS)}, tokenize='unicode61')"
                    )
                    db.execute(f"PRAGMA user_version={int(self.version)}")
        except BaseException:
            db.close()
            raise
        return db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def parts(self) -> dict[str, Part]:
        """Every kept part by server."""
        with self._lock:
            rows = self._open().execute("SELECT server, entry, listed_at, expires_at FROM parts").fetchall()
        return {server: Part(entry, listed_at, expires_at) for server, entry, listed_at, expires_at in rows}

    def put(self, server: str, entry: str, documents: Sequence[Document], ttl_s: float | None = None) -> None:
        """Keep `documents` as the server's part, in place of what was kept."""
        now = time.time()
        expires = None if ttl_s is None else now + ttl_s
        rows = [(server, doc.tool, doc.definition, *(doc.fields.get(column, "") for column in COLUMNS)) for doc in documents]
        with self._lock:
            db = self._open()
            with _transaction(db):
                db.execute("DELETE FROM tools WHERE server = ?", (server,))
                db.executemany(f"INSERT INTO tools VALUES ({', '.join('?' * (3 + len(COLUMNS)))})", rows)
                db.execute("INSERT OR REPLACE INTO parts VALUES (?, ?, ?, ?)", (server, entry, now, expires))

    def expire(self, server: str) -> None:
        """The server said its tools changed: its part holds until it is listed again, no longer."""
        with self._lock:
            self._open().execute("UPDATE parts SET expires_at = 0 WHERE server = ?", (server,))

    def drop(self, servers: Sequence[str]) -> None:
        """Forget these servers' parts (their entries changed or went away)."""
        if not servers:
            return
        with self._lock:
            db = self._open()
            with _transaction(db):
                for server in servers:
                    db.execute("DELETE FROM tools WHERE server = ?", (server,))
                    db.execute("DELETE FROM parts WHERE server = ?", (server,))

    def search(self, match: str, servers: Sequence[str], weights: Sequence[float], limit: int) -> list[Hit]:
        """The best `limit` tools of `servers` for an FTS5 `match` expression, best first."""
        if not servers:
            return []
        marks = ", ".join("?" * len(servers))
        sql = (
            f"SELECT server, tool, definition, bm25(tools, 0, 0, 0, {', '.join(str(float(w)) for w in weights)}) AS score "
            f"FROM tools WHERE tools MATCH ? AND server IN ({marks}) ORDER BY score LIMIT ?"
        )
        with self._lock:
            rows = self._open().execute(sql, (match, *servers, limit)).fetchall()
        return [Hit(server, tool, definition, -score) for server, tool, definition, score in rows]


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taking the write lock at once (waiting up to the busy timeout)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
