"""One long-lived event loop in its own thread, where all downstream client work runs.

A client session must live on one loop for as long as it stays warm, while its callers come from
anywhere: the host face's loop (in stdio mode, this very loop), a sync caller, a plain thread. They
hand coroutines to this loop through an anyio blocking portal (`run` blocks, `run_async` awaits;
the portal only refuses its own thread, where waiting would deadlock).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

T = TypeVar("T")


class Runtime:
    """Starts the worker loop on first use and keeps it until `close()`.

    `services` are long-running tasks started with the loop (the session pool); closing the runtime
    cancels them, which closes every session and kills every child.
    """

    def __init__(self, services: Sequence[Callable[..., Awaitable[None]]] = ()) -> None:
        self._services = tuple(services)
        self._lock = threading.Lock()
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._loop_thread: int | None = None

    def _get_portal(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                self._portal_cm = start_blocking_portal(name="mcp-bridge-worker")
                self._portal = self._portal_cm.__enter__()
                self._loop_thread = self._portal.call(threading.get_ident)
                for service in self._services:
                    self._portal.start_task(service)
            return self._portal

    def run(self, func: Callable[[], Awaitable[T]]) -> T:
        """Run `func()` on the worker loop and block until its result (exceptions propagate)."""
        return self._get_portal().call(func)

    def start(self, func: Callable[[], Awaitable[T]]) -> Future[T]:
        """Start `func()` on the worker loop; its future can be waited on again after a signal."""
        return self._get_portal().start_task_soon(func)

    def call(self, func: Callable[[], T]) -> T:
        """Run a plain `func()` in the worker loop's thread (what must not touch the loop from outside)."""
        return self._get_portal().call(func)

    async def run_async(self, func: Callable[[], Awaitable[T]]) -> T:
        """Await `func()` run on the worker loop, from any event loop, without blocking that loop.

        The caller's context variables go with it (the current trace span, among them): asyncio's
        `call_soon_threadsafe`, under the portal, runs in a copy of the calling thread's context.
        """
        portal = self._get_portal()
        if threading.get_ident() == self._loop_thread:
            return await func()
        return await asyncio.wrap_future(portal.start_task_soon(func))

    def close(self) -> None:
        """Stop the worker loop; tasks still running on it are cancelled first."""
        with self._lock:
            portal_cm, portal = self._portal_cm, self._portal
            self._portal_cm, self._portal = None, None
        if portal_cm is not None and portal is not None:
            portal.call(portal.stop, True)
            portal_cm.__exit__(None, None, None)
