"""The state file `<state_dir>/oauth/state.json`, shared by every bridge process and the CLI.

It is a `bridge.store.json_file.JsonFile`: writes under an exclusive lock, re-read under it,
published atomically through a 0600 temp file; reads cached by file identity, so a revocation
made by another process is seen on the very next read and an unchanged file costs one `stat`;
the request path parses a changed file in a worker thread (`read_async`).
A file that cannot be parsed is never overwritten; reads report it as `StoreUnreadable`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from bridge.host.oauth.state import OAuthState
from bridge.store.json_file import JsonFile, Unreadable

T = TypeVar("T")


class StoreUnreadable(Exception):
    """The state file exists but is not a state this code understands."""


def _parse(data: Any) -> OAuthState:
    return OAuthState.model_validate(data)  # a ValidationError is a ValueError: JsonFile says Unreadable


class OAuthStore:
    """Reads and writes one state directory's OAuth file."""

    def __init__(self, state_dir: Path) -> None:
        self.directory = state_dir / "oauth"
        self.path = self.directory / "state.json"
        self._file = JsonFile(self.path, _parse)

    def read(self) -> OAuthState:
        """The current state; treat it as read-only (it is shared with later readers)."""
        try:
            return self._file.read() or OAuthState()
        except Unreadable as exc:
            raise StoreUnreadable(str(exc)) from None

    async def read_async(self) -> OAuthState:
        """`read` for the event loop: from the cache when the file is unchanged, else parsed in a
        worker thread (right after a write the file is parsed again, see `JsonFile`)."""
        cached = self._file.cached()
        if cached is not None:
            return cached
        return await anyio.to_thread.run_sync(self.read)

    @contextmanager
    def update(self) -> Iterator[OAuthState]:
        """Yield a copy of the state read under the lock; what the block leaves in it is written back."""
        with self._file.locked():
            state = self.read().model_copy(deep=True)
            yield state
            state.purge(time.time())
            self._file.publish(state.model_dump(mode="json"))

    async def change(self, step: Callable[[OAuthState], T]) -> T:
        """Run `step` on the state under the lock, in a worker thread (the lock may be waited for).

        A step that raises writes nothing; to refuse after changing something, return the refusal.
        """
        def run() -> T:
            with self.update() as state:
                return step(state)

        return await anyio.to_thread.run_sync(run)
