"""OAuth tokens for downstream servers that sign in: one file per server, shared by every bridge process.

`<state>/oauth/servers/<name>.json` (0600, written atomically under a lock) holds, per URL, the
client the bridge registered, the tokens and when the access token expires (absolute: a process
that reads it later must not restart the clock). A sign-in is bound to its URL: tokens are never
sent to another URL registered under the same name later, and a dynamic entry that shadows a
config entry of the same name (another URL) neither overwrites nor, removed, forgets the
developer's sign-in. Tokens never go to `servers.json`, a listing, an
error or the audit log; children cannot read the state directory.

It is the MCP SDK's `TokenStorage`, so its `OAuthClientProvider` reads and writes through it.
`refreshing()` is the lock two processes hold around a refresh, so that one refreshes and the other
then reads the new tokens instead of spending the rotated refresh token again.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
import portalocker
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import BaseModel, ValidationError

from bridge.store.json_file import JsonFile, Unreadable

REFRESH_LOCK_TIMEOUT_S = 30.0


class _Saved(BaseModel):
    url: str
    client: OAuthClientInformationFull | None = None
    tokens: OAuthToken | None = None
    expires_at: float | None = None


class _SignIns(BaseModel):
    """The file: each URL's sign-in under the same server name."""

    by_url: dict[str, _Saved] = {}


def _parse(data: Any) -> _SignIns:
    try:
        if isinstance(data, dict) and "url" in data:  # one sign-in, as the first files were written
            saved = _Saved.model_validate(data)
            return _SignIns(by_url={saved.url: saved})
        return _SignIns.model_validate(data)
    except ValidationError as exc:
        raise Unreadable(f"not a token file: {exc.errors()[0]['msg']}") from None


class ServerTokens:
    """The sign-in of one registered server, as the SDK's `TokenStorage`."""

    def __init__(self, directory: Path, name: str, url: str) -> None:
        self.path = directory / f"{name}.json"
        self.url = url
        self._file = JsonFile(self.path, _parse)

    def _all(self) -> _SignIns:
        try:
            return self._file.read() or _SignIns()
        except Unreadable:
            return _SignIns()

    def _saved(self) -> _Saved | None:
        """What is kept for this server at this URL; None when nothing is, or only for another URL."""
        return self._all().by_url.get(self.url)

    @property
    def signed_in(self) -> bool:
        saved = self._saved()
        return saved is not None and saved.tokens is not None

    @property
    def expires_at(self) -> float | None:
        saved = self._saved()
        return saved.expires_at if saved is not None else None

    def _publish(self, kept: _SignIns) -> None:
        self._file.publish(kept.model_dump(mode="json", exclude_none=True))

    def _update(self, **changes: Any) -> None:
        with self._file.locked():
            kept = self._all()
            saved = kept.by_url.get(self.url) or _Saved(url=self.url)
            kept.by_url[self.url] = saved.model_copy(update=changes)
            self._publish(kept)

    def forget(self) -> bool:
        """Drop the sign-in at this URL (another URL's under the same name stays); whether there was one."""
        with self._file.locked():
            try:
                kept = self._file.read() or _SignIns()
            except Unreadable:  # nothing in it can be used: it goes
                self.path.unlink(missing_ok=True)
                return True
            if kept.by_url.pop(self.url, None) is None:
                return False
            if kept.by_url:
                self._publish(kept)
            else:
                self.path.unlink(missing_ok=True)
            return True

    # -- the SDK's TokenStorage ----------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        saved = self._saved()
        return saved.tokens if saved is not None else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        await anyio.to_thread.run_sync(lambda: self._update(tokens=tokens, expires_at=expires_at))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        saved = self._saved()
        return saved.client if saved is not None else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await anyio.to_thread.run_sync(lambda: self._update(client=client_info))

    @asynccontextmanager
    async def refreshing(self) -> AsyncIterator[None]:
        """Hold the server's refresh lock (across processes), waited for off the event loop."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = portalocker.Lock(
            str(self.path) + ".refresh.lock", mode="a", timeout=REFRESH_LOCK_TIMEOUT_S, flags=portalocker.LOCK_EX | portalocker.LOCK_NB
        )
        await anyio.to_thread.run_sync(lock.acquire)
        try:
            yield
        finally:
            lock.release()
