"""The state file `<state_dir>/oauth/state.json`, shared by every bridge process and the CLI.

- Writes: exclusive portalocker lock, re-read under it, a random 0600 temp file in the same
  directory, fsync, `os.replace`, directory fsync. A crash leaves the old file or the new one.
- Reads: no lock (a replace is atomic); the parsed state is cached by the file's inode, mtime and
  size. Every write makes a new inode, so a revocation made by another process is seen on the very
  next read, and an unchanged file costs one `stat`.
- A file that cannot be parsed is never overwritten; reads report it as `StoreUnreadable`.
"""

from __future__ import annotations

import glob
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import anyio.to_thread
import portalocker
from pydantic import ValidationError

from bridge.host.oauth.state import OAuthState

LOCK_TIMEOUT_S = 5.0
# Writers hold the lock for milliseconds; a short poll keeps waiters from starving (see bridge.registry).
_LOCK_POLL_S = 0.01
_TEMP_PREFIX = ".state.json."
_TEMP_SUFFIX = ".tmp"

T = TypeVar("T")


class StoreUnreadable(Exception):
    """The state file exists but is not a state this code understands."""


class OAuthStore:
    """Reads and writes one state directory's OAuth file."""

    def __init__(self, state_dir: Path) -> None:
        self.directory = state_dir / "oauth"
        self.path = self.directory / "state.json"
        self._lock_path = self.directory / "state.json.lock"
        self._cached: tuple[tuple[int, int, int], OAuthState] | None = None

    def read(self) -> OAuthState:
        """The current state; treat it as read-only (it is shared with later readers)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return OAuthState()
        key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        state = self._parse()
        self._cached = (key, state)
        return state

    def _parse(self) -> OAuthState:
        try:
            return OAuthState.model_validate_json(self.path.read_bytes())
        except FileNotFoundError:
            return OAuthState()
        except (OSError, ValidationError) as exc:
            raise StoreUnreadable(f"{self.path} cannot be read: {exc}") from None

    @contextmanager
    def update(self) -> Iterator[OAuthState]:
        """Yield the state read under the lock; what the block leaves in it is written back."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # portalocker would create the lock file with the umask's mode; every file here is 0600.
        os.close(os.open(self._lock_path, os.O_CREAT | os.O_WRONLY, 0o600))
        lock = portalocker.Lock(
            str(self._lock_path),
            mode="a",
            timeout=LOCK_TIMEOUT_S,
            check_interval=_LOCK_POLL_S,
            flags=portalocker.LOCK_EX | portalocker.LOCK_NB,
        )
        with lock:
            self._remove_stale_temps()
            state = self._parse()
            yield state
            state.purge(time.time())
            self._publish(state.model_dump_json(indent=1).encode())

    async def change(self, step: Callable[[OAuthState], T]) -> T:
        """Run `step` on the state under the lock, in a worker thread (the lock may be waited for).

        A step that raises writes nothing; to refuse after changing something, return the refusal.
        """
        def run() -> T:
            with self.update() as state:
                return step(state)

        return await anyio.to_thread.run_sync(run)

    def _remove_stale_temps(self) -> None:
        """Temp files of writers killed mid-write; under the lock none belongs to a live writer."""
        for stale in self.directory.glob(glob.escape(_TEMP_PREFIX) + "*" + _TEMP_SUFFIX):
            stale.unlink(missing_ok=True)

    def _publish(self, data: bytes) -> None:
        fd, temp_name = tempfile.mkstemp(dir=self.directory, prefix=_TEMP_PREFIX, suffix=_TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp_name, self.path)
        except BaseException:
            Path(temp_name).unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
