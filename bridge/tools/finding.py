"""Search across servers: `mcp_list_tools(query=...)` answered from the kept catalog index.

The index (`bridge.store.catalog`) is written whenever a session lists a server's tools, marked
stale when the server announces `tools/list_changed` or its list's `ttlMs` passes, and read by
every search; so a search after a restart starts no server. A server the index does not hold (or
holds stale) is listed by the search itself: at most `MCP_MAX_SESSIONS` at a time, each within
`MCP_START_TIMEOUT`, in the background of the worker loop. The search waits for the servers never
indexed at most `MCP_SEARCH_WAIT_S`, then answers with what it has and names the rest, with why; a
listing still running goes on, so the next search has it. A part past its `ttlMs` answers at once
while its server, if a session to it is open, is listed again in the background (as an HTTP cache
revalidates); a search never starts a server only to revalidate.

Mixed into `Bridge`.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus

from bridge.downstream.pool import Listings
from bridge.errors import BridgeError
from bridge.models import Match, NotIndexed, ServerSpec
from bridge.store.catalog import Catalog, entry_key
from bridge.tools import output, policy, search, validation
from bridge.tools.reply import Reply

if TYPE_CHECKING:
    from bridge.tools.bridge import Bridge

logger = logging.getLogger("mcp_bridge.tools")

# A list's ttlMs, at least this: the SDK's default of 0 ("stale at once") would relist on every search.
REVALIDATE_AFTER_S = 60.0
STILL_STARTING = "still starting; the next search includes it once listed"


@dataclass
class _Run:
    done: anyio.Event = field(default_factory=anyio.Event)
    error: BridgeError | None = None


class Indexing(Listings):
    """Keeps the index as sessions list, and lists servers a search needs, in the background."""

    def __init__(self, bridge: Bridge) -> None:
        self._bridge = bridge
        self._running: dict[str, _Run] = {}
        self._tg: TaskGroup | None = None
        self._slots: anyio.Semaphore | None = None

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg, self._slots = tg, anyio.Semaphore(self._bridge.settings.max_sessions)
            task_status.started()
            await anyio.sleep_forever()

    async def listed(self, name: str, tools: list[types.Tool], ttl_s: float | None) -> None:
        held = None if ttl_s is None else max(ttl_s, REVALIDATE_AFTER_S)
        await anyio.to_thread.run_sync(self._keep, name, tools, held)

    async def changed(self, name: str) -> None:
        await anyio.to_thread.run_sync(self._quietly, lambda: self._bridge.catalog.expire(name))

    def _keep(self, name: str, tools: list[types.Tool], ttl_s: float | None) -> None:
        """Keep the tools under the registry entry they were listed from (none left: not kept)."""
        entry = self._bridge.registry.merged().get(name)
        if entry is not None:
            documents = [search.document(name, tool) for tool in tools]
            self._quietly(lambda: self._bridge.catalog.put(name, entry_key(name, entry[0]), documents, ttl_s))

    @staticmethod
    def _quietly(write: Callable[[], None]) -> None:
        """The index is a cache: a write that fails costs a listing later, never the call now."""
        try:
            write()
        except (sqlite3.Error, OSError) as exc:
            logger.warning("the catalog index was not updated: %s", exc)

    async def gather(
        self, specs: dict[str, ServerSpec], wait_s: float, later: dict[str, ServerSpec]
    ) -> dict[str, BridgeError | None | str]:
        """List each server of `specs` (runs already under way are joined), waiting at most
        `wait_s`: each one's error, None when it was indexed, `STILL_STARTING` when it is not done
        yet. Those of `later` with a session open now are listed too, not waited for."""
        runs = {name: self._start(name, spec) for name, spec in specs.items()}
        for name, spec in later.items():
            if self._bridge.sessions.live(name):
                self._start(name, spec)
        with anyio.move_on_after(wait_s):
            for run in runs.values():
                await run.done.wait()
        return {name: run.error if run.done.is_set() else STILL_STARTING for name, run in runs.items()}

    def _start(self, name: str, spec: ServerSpec) -> _Run:
        if name not in self._running:
            self._running[name] = _Run()
            assert self._tg is not None, "Indexing.serve() is not running"
            self._tg.start_soon(self._list, name, spec)
        return self._running[name]

    async def _list(self, name: str, spec: ServerSpec) -> None:
        run = self._running[name]
        try:
            assert self._slots is not None
            async with self._slots:
                await self._bridge.sessions.catalog(name, spec, refresh=True)
        except BridgeError as exc:
            run.error = exc
        except Exception as exc:  # the pool classifies what it meets; anything else must not end the service
            logger.warning("listing %s for the index failed: %r", name, exc)
            run.error = BridgeError("protocol_error", f"Listing failed: {type(exc).__name__}.")
        finally:
            del self._running[name]
            run.done.set()


def _reason(error: BridgeError | str) -> str:
    if isinstance(error, str):
        return error
    if error.code == "auth_required":
        return "signing in needed: call mcp_list_tools(server) to start it"
    return f"failed to start: {error.message}"


class Finding:
    """Mixed into `Bridge`: the search face of `mcp_list_tools`."""

    async def _find(self: Bridge, query: object, limit: object, server: object) -> Reply:
        text, most = validation.query(query), validation.limit(limit)
        not_indexed: list[NotIndexed] = []
        targets: dict[str, tuple[ServerSpec, str]] = {}  # name -> (spec ready to connect, entry key)
        if server is None or server == "":
            listed = {name: spec for name, (spec, _) in self.registry.merged().items()}
            for name, spec in listed.items():
                try:
                    targets[name] = (self.resolve(name)[1], entry_key(name, spec))
                except BridgeError as exc:  # a disabled transport, a missing secret: not usable here
                    not_indexed.append(NotIndexed(server=name, reason=f"cannot be used here: {exc.message}"))
        else:  # one server: what stops it from being used is the answer, as for its listing
            name, ready = self.resolve(server)
            listed = {name: self.registry.get(name)}
            targets[name] = (ready, entry_key(name, listed[name]))
        parts = await anyio.to_thread.run_sync(self.catalog.parts)
        gone = [name for name, part in parts.items() if (name in listed or server in (None, "")) and
                (name not in targets or part.entry != targets[name][1])]  # fmt: skip
        await anyio.to_thread.run_sync(self.catalog.drop, gone)
        now = time.time()
        kept = {name for name, part in parts.items() if name in targets and name not in gone}
        fresh = {name for name in kept if parts[name].expires_at is None or parts[name].expires_at > now}
        # Never indexed, or said to have changed: listed now, waited for. Past its ttlMs: answered
        # from, and listed again in the background where a session is open (a search starts no
        # server to revalidate; a session that opens lists anyway).
        changed = {name for name in kept if parts[name].expires_at == 0}
        missing = {name: targets[name][0] for name in targets if name not in kept or name in changed}
        stale = {name: targets[name][0] for name in kept - fresh - changed}
        if missing or stale:
            wait_s = self.settings.search_wait_s
            outcomes = await self.runtime.run_async(lambda: self.indexing.gather(missing, wait_s, stale))
            for name, outcome in outcomes.items():
                if outcome is None:
                    kept.add(name)
                elif name not in kept:  # a part kept from before still answers while its server cannot
                    not_indexed.append(NotIndexed(server=name, reason=_reason(outcome)))
        searched = sorted(kept)
        match = search.match_expression(text)
        weights = list(search.WEIGHTS.values())
        hits = await anyio.to_thread.run_sync(lambda: self.catalog.search(match, searched, weights, most)) if match else []
        matches = []
        for hit in hits:
            tool = types.Tool.model_validate_json(hit.definition)
            refused = policy.refused(self._policy(hit.server), tool)
            matches.append(Match(server=hit.server, tool=hit.tool, description=tool.description or "", refused=refused))
        not_indexed.sort(key=lambda item: item.server)
        data, shown = output.found(text, matches, searched, not_indexed, self.settings.max_chars)
        return Reply(text=shown, data=data)
