"""A face's serving, and how to end it cleanly: what Ctrl-C and SIGTERM ask of it (see `bridge.host.main`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Serving:
    """`serve` runs on the worker loop until the host goes or `stop` is called (in that loop's
    thread); after a stop it returns normally, its sessions closed, so the bridge exits 0."""

    serve: Callable[[], Awaitable[None]]
    stop: Callable[[], None]
