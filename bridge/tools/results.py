"""Recent whole results, kept so that a model can read a cut result on, part by part.

A result over the character budget is kept under a random handle, bound to the caller that got it
(a handle seen by another caller reads nothing) and to its server and tool. The keep is bounded in
time (`result_keep_s` after it was last read) and in memory (`result_keep_chars` in all; the least
recently read go first). Nothing is written to disk.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from bridge.errors import BridgeError


@dataclass
class _Kept:
    caller: str
    server: str
    tool: str
    text: str
    touched: float


class Results:
    def __init__(self, *, keep_s: float, keep_chars: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.keep_s = keep_s
        self.keep_chars = keep_chars
        self._clock = clock
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._chars = 0

    def keep(self, caller: str, server: str, tool: str, text: str) -> str | None:
        """Keep `text`; its handle, or None when it alone is over the memory bound."""
        if len(text) > self.keep_chars or self.keep_s <= 0:
            return None
        handle = "r-" + secrets.token_urlsafe(12)
        self._kept[handle] = _Kept(caller, server, tool, text, self._clock())
        self._chars += len(text)
        self._expire()
        return handle

    def text(self, handle: str, caller: str, server: str, tool: str) -> str:
        """The kept text, for its own caller, server and tool only; reading it keeps it longer."""
        self._expire()
        kept = self._kept.get(handle)
        if kept is None or (kept.caller, kept.server, kept.tool) != (caller, server, tool):
            raise BridgeError(
                "invalid_argument",
                f"result_handle {handle[:40]!r} names no result kept for this caller, server and tool (results are "
                f"kept {self.keep_s:g} s after they were last read); call the tool again.",
            )
        kept.touched = self._clock()
        self._kept.move_to_end(handle)
        return kept.text

    def _expire(self) -> None:
        now = self._clock()
        while self._kept:
            handle, oldest = next(iter(self._kept.items()))
            if self._chars <= self.keep_chars and now - oldest.touched < self.keep_s:
                break
            del self._kept[handle]
            self._chars -= len(oldest.text)
