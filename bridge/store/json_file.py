"""A JSON file that several processes share: forgiving cached reads, strict locked atomic writes.

- Reads are cached by the file's identity (device, inode, size, mtime): a write by another process
  replaces the inode, so the next read sees it; an unchanged file is never parsed twice. As git
  does for its index ("racy git"), a file changed less than `SETTLED_S` before it was read is not
  cached: a freed inode may be reused at once, and within the file system's timestamp granularity
  a new version could then look like the old one.
- Writes take an exclusive lock (`<file>.lock`), hand the caller the current content read strictly
  under it, and publish through a random 0600 temp file in the same directory: fsync, `os.replace`,
  directory fsync. A crash at any point leaves the old file or the new one; the temp file a killed
  writer leaves behind is removed by the next writer (under the lock, none can belong to a live one).
"""

from __future__ import annotations

import glob
import json
import logging
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

import portalocker

logger = logging.getLogger("mcp_bridge.store")

T = TypeVar("T")
LOCK_TIMEOUT_S = 5.0
# A write holds the lock for milliseconds; waiters poll it (a blocking flock could not time out).
# At portalocker's default of 0.25 s a waiter loses the race to fresh writers again and again:
# with 8 busy writers the slowest write took about 2 s, against 0.4 s at 0.01 s.
_LOCK_POLL_S = 0.01
_TEMP_SUFFIX = ".tmp"
SETTLED_S = 1.0
# The step that publishes a write; the crash tests stand in for it to stop a writer right there.
_replace = os.replace


class Unreadable(Exception):
    """The file exists but does not hold what its parser expects."""


class Locked(Exception):
    """Another writer held the lock for longer than `LOCK_TIMEOUT_S`."""


def read_untrusted(path: Path, max_bytes: int) -> bytes | None:
    """Read a file that a sandboxed child may have planted: never through a symlink, only a regular
    file, never blocking (a FIFO is refused at once), at most `max_bytes`. None when it is missing;
    `Unreadable` for anything else that is not a small regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a symlink; EACCES...
        raise Unreadable(f"cannot open {path} safely: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{path} is not a regular file")
        if info.st_size > max_bytes:
            raise Unreadable(f"{path} is larger than {max_bytes} bytes")
        data = os.read(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise Unreadable(f"{path} is larger than {max_bytes} bytes")
    return data


class JsonFile(Generic[T]):
    """One shared JSON file; `parse` turns its decoded JSON into `T` or raises `Unreadable`."""

    def __init__(self, path: Path, parse: Callable[[Any], T]) -> None:
        self.path = path
        self._parse = parse
        # Temp files are named after the file, so a writer only ever cleans up its own kind.
        self._temp_prefix = f".{path.name}."
        self._cached: tuple[tuple[int, int, int, int], T] | None = None

    def cached(self) -> T | None:
        """The parsed content when the cache still holds the file as it is (one `stat`), else None:
        a caller on an event loop then reads in a worker thread instead."""
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        return self._cached[1] if self._cached is not None and self._cached[0] == key else None

    def read(self) -> T | None:
        """The parsed content (cached by file identity); None when missing; `Unreadable` when bad."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise Unreadable(f"cannot read {self.path}: {exc.strerror}") from None
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise Unreadable(f"cannot read {self.path}: {exc}") from None
        try:
            value = self._parse(json.loads(text))
        except ValueError as exc:
            raise Unreadable(f"{self.path} is not valid JSON: {exc}") from None
        settled = time.time_ns() - info.st_mtime_ns > SETTLED_S * 1e9
        self._cached = (key, value) if settled else None
        return value

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive lock; read and publish inside it.

        Raises `Locked`, or `OSError` (the lock or its directory cannot be made).
        """
        lock = portalocker.Lock(
            str(self.path) + ".lock",
            mode="a",
            timeout=LOCK_TIMEOUT_S,
            check_interval=_LOCK_POLL_S,
            flags=portalocker.LOCK_EX | portalocker.LOCK_NB,
        )
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # portalocker would create the lock file with the umask's mode; every file here is 0600.
        os.close(os.open(str(self.path) + ".lock", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        try:
            lock.acquire()
        except portalocker.exceptions.AlreadyLocked:
            raise Locked(f"{self.path} is locked by another writer for over {LOCK_TIMEOUT_S:g} s") from None
        except portalocker.exceptions.LockException as exc:
            raise OSError(str(exc)) from None
        try:
            self._remove_stale_temps()
            yield
        finally:
            lock.release()

    def _remove_stale_temps(self) -> None:
        for stale in self.path.parent.glob(glob.escape(self._temp_prefix) + "*" + _TEMP_SUFFIX):
            stale.unlink(missing_ok=True)
            logger.warning("removed %s, left by a writer that stopped mid-write", stale)

    def publish(self, payload: Any) -> None:
        """Replace the file with `payload` as JSON, atomically (call inside `locked()`)."""
        data = json.dumps(payload, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
        directory = self.path.parent
        fd, temp_name = tempfile.mkstemp(dir=directory, prefix=self._temp_prefix, suffix=_TEMP_SUFFIX)  # mode 0600
        temp = Path(temp_name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            _replace(temp, self.path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
