"""Back-off for servers that fail to start or connect, so a model retrying in a loop costs nothing.

After `after` consecutive failures to open a session, the server is held: every call answers at
once with the last error and when the bridge will try again, instead of spawning or dialling. The
hold doubles with each further failure, up to `max_s`; once it has passed, one attempt goes
through. A success, a changed spec or a re-registration (`reset`) clears the count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bridge.errors import BridgeError
from bridge.models import ServerSpec

FIRST_HOLD_S = 5.0


@dataclass
class _Failures:
    spec: ServerSpec
    count: int
    last: BridgeError
    until: float = 0.0


class Backoff:
    def __init__(self, *, after: int, max_s: float, clock: Callable[[], float]) -> None:
        self.after = after
        self.max_s = max_s
        self._clock = clock
        self._failures: dict[str, _Failures] = {}

    def check(self, name: str, spec: ServerSpec) -> None:
        """Raise the last error, with when the next attempt is due, while `name` is held."""
        failures = self._failures.get(name)
        if failures is None or failures.spec != spec:
            return
        wait = failures.until - self._clock()
        if wait <= 0:
            return
        retry_at = datetime.now(UTC) + timedelta(seconds=wait)
        last = failures.last
        raise BridgeError(
            last.code,
            f"{last.message} Not retried: {failures.count} attempts in a row failed; the bridge tries again "
            f"in {wait:.0f} s (at {retry_at:%H:%M:%S} UTC), or at once after mcp_add_server re-registers {name!r}.",
            retryable=True,
            **last.detail,
            held=True,
            failures=failures.count,
            retry_in_s=round(wait, 1),
            retry_at=retry_at.isoformat(timespec="seconds"),
        )

    def failed(self, name: str, spec: ServerSpec, error: BridgeError) -> None:
        if error.code == "auth_required":  # waits for the user to sign in, not for time to pass
            return
        failures = self._failures.get(name)
        if failures is None or failures.spec != spec:
            failures = self._failures[name] = _Failures(spec=spec, count=0, last=error)
        failures.count += 1
        failures.last = error
        if failures.count >= self.after:
            hold = min(self.max_s, FIRST_HOLD_S * 2 ** (failures.count - self.after))
            failures.until = self._clock() + hold

    def reset(self, name: str) -> None:
        self._failures.pop(name, None)
