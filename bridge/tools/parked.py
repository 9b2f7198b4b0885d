"""Calls parked on a 2026-07-28 host's answers: a server's ask becomes an `input_required` result.

A host of the 2026-07-28 era takes no requests from the bridge: it answers by calling again with
`input_responses` and the `request_state` it was given (multi round-trip). Whatever era the server
speaks, its asks reach the bridge as callbacks of a running call (a handshake-era server sends
`elicitation/create`; a 2026-07-28 server's own `input_required` rounds are driven by the SDK
client through the same callbacks). So the call runs on in the background, parked on its asks;
the host's `mcp_call_tool` request returns them as `input_required`, and the retry delivers the
answers and waits for what comes next: the result, or the next asks.

`request_state` is attacker-controlled input: it names the parked call under an HMAC (a key of
this process) over the call's id, its expiry, the caller, the server and the tool, so a state
forged, altered, expired, or replayed by another caller or for another tool opens nothing. (The
host face seals it once more on the wire: FastMCP's request-state boundary.) A call whose host
does not come back within `ttl_s` is cancelled downstream. All of this runs on the worker loop.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus

from bridge.downstream.relay import Abilities, Answer, Ask, HostChannel
from bridge.errors import BridgeError

T = TypeVar("T")


@dataclass
class _OpenAsk:
    request: Ask
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer | None = None


@dataclass(frozen=True)
class Asks:
    """What the host must answer before the call can go on, and the state to send back."""

    requests: dict[str, Ask]
    state: str


class _Parked(Generic[T]):
    def __init__(self, call_id: str, caller: str, server: str, tool: str, channel: HostChannel) -> None:
        self.id = call_id
        self.caller, self.server, self.tool = caller, server, tool
        self.abilities = channel.abilities  # the session was chosen for these; they stay
        self.channel: HostChannel | None = channel  # the host request waiting now, if any
        self.asks: dict[str, _OpenAsk] = {}
        self.changed = anyio.Event()
        self.scope = anyio.CancelScope()
        self.done = False
        self.value: T | None = None
        self.error: BaseException | None = None
        self._keys = 0

    def key(self) -> str:
        self._keys += 1
        return f"ask-{self._keys}"


class _ParkingChannel:
    """The channel the parked call's relay sees: progress and logs go to the host request waiting
    now (none while parked), asks are parked until the host answers them."""

    def __init__(self, parked: _Parked[object], ttl_s: float) -> None:
        self._parked = parked
        self._ttl_s = ttl_s

    @property
    def abilities(self) -> Abilities:
        return self._parked.abilities

    @property
    def wants_progress(self) -> bool:
        return True  # each round's host request decides; the relay drops what has nowhere to go

    @property
    def defers_asks(self) -> bool:
        return False

    @property
    def caller(self) -> str:
        return self._parked.caller

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        channel = self._parked.channel
        if channel is not None and channel.wants_progress:
            await channel.progress(progress, total, message)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self._parked.channel is not None:
            await self._parked.channel.log(params)

    async def ask(self, request: Ask) -> Answer:
        parked = self._parked
        key = parked.key()
        pending = _OpenAsk(request)
        parked.asks[key] = pending
        parked.changed.set()
        try:
            with anyio.move_on_after(self._ttl_s):
                await pending.answered.wait()
        finally:
            del parked.asks[key]
        if pending.answer is None:  # the host never came back: the call ends here
            parked.scope.cancel()
            return types.ErrorData(code=types.REQUEST_TIMEOUT, message="The user did not answer in time.")
        return pending.answer


def _matches(request: Ask, answer: types.InputResponse) -> bool:
    if isinstance(request, types.ElicitRequest):
        return isinstance(answer, types.ElicitResult)
    return isinstance(answer, types.CreateMessageResult | types.CreateMessageResultWithTools)


class Parking:
    """The parked calls of this bridge; `serve()` runs on the worker loop."""

    def __init__(self, *, ttl_s: float, max_parked: int, clock: Callable[[], float] = time.time) -> None:
        self.ttl_s = ttl_s
        self.max_parked = max_parked
        self._clock = clock
        self._key = os.urandom(32)
        self._parked: dict[str, _Parked[object]] = {}
        self._tg: TaskGroup | None = None

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()

    async def start(
        self, caller: str, server: str, tool: str, channel: HostChannel, run: Callable[[HostChannel], Awaitable[T]]
    ) -> T | Asks:
        """Run the call in the background; its result, or the asks it is parked on."""
        if len(self._parked) >= self.max_parked:
            raise BridgeError(
                "forbidden", "Too many calls are waiting for the user's answers; answer one first.", retryable=True
            )
        parked: _Parked[T] = _Parked(secrets.token_urlsafe(16), caller, server, tool, channel)
        self._parked[parked.id] = parked  # type: ignore[assignment]
        assert self._tg is not None, "Parking.serve() is not running"
        self._tg.start_soon(self._run, parked, run)
        return await self._next(parked)

    async def resume(
        self,
        state: str,
        caller: str,
        server: str,
        tool: str,
        channel: HostChannel,
        responses: dict[str, types.InputResponse],
    ) -> T | Asks:
        """Deliver the host's answers to the call `state` names, and wait for what comes next."""
        parked = self._unseal(state, caller, server, tool)
        parked.channel = channel
        for key, answer in responses.items():
            pending = parked.asks.get(key)
            if pending is None or pending.answered.is_set():
                continue
            if _matches(pending.request, answer):
                pending.answer = answer
            else:
                pending.answer = types.ErrorData(code=types.INVALID_PARAMS, message=f"The answer to {key} is of the wrong kind.")
            pending.answered.set()
        return await self._next(parked)  # type: ignore[return-value]

    async def _run(self, parked: _Parked[T], run: Callable[[HostChannel], Awaitable[T]]) -> None:
        with parked.scope:
            try:
                parked.value = await run(_ParkingChannel(parked, self.ttl_s))  # type: ignore[arg-type]
            except Exception as exc:  # handed to the host request that waits for the outcome
                parked.error = exc
        if parked.scope.cancelled_caught and parked.error is None and parked.value is None:
            parked.error = BridgeError(
                "timeout", f"The user did not answer what the server asked within {self.ttl_s:g} s; the call was cancelled."
            )
        parked.done = True
        parked.changed.set()

    async def _next(self, parked: _Parked[T]) -> T | Asks:
        try:
            while True:
                if parked.done:
                    self._parked.pop(parked.id, None)
                    if parked.error is not None:
                        raise parked.error
                    return parked.value  # type: ignore[return-value]
                open_asks = {key: ask.request for key, ask in parked.asks.items() if not ask.answered.is_set()}
                if open_asks:
                    parked.channel = None  # no host request waits until the retry
                    return Asks(requests=open_asks, state=self._seal(parked))
                parked.changed = anyio.Event()
                await parked.changed.wait()
        except anyio.get_cancelled_exc_class():
            parked.scope.cancel()  # the host gave up on its call
            self._parked.pop(parked.id, None)
            raise

    def _mac(self, call_id: str, expires: int, caller: str, server: str, tool: str) -> str:
        message = "\0".join((call_id, str(expires), caller, server, tool)).encode("utf-8", "backslashreplace")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def _seal(self, parked: _Parked[object]) -> str:
        expires = int(self._clock() + self.ttl_s)
        return f"{parked.id}.{expires}.{self._mac(parked.id, expires, parked.caller, parked.server, parked.tool)}"

    def _unseal(self, state: str, caller: str, server: str, tool: str) -> _Parked[object]:
        refused = BridgeError(
            "invalid_argument",
            "request_state is not one this bridge gave for this caller, server and tool, or it expired; call the tool again without it.",
        )
        call_id, _, rest = state.partition(".")
        expires_text, _, mac = rest.partition(".")
        if not expires_text.isdigit():
            raise refused
        expires = int(expires_text)
        if not hmac.compare_digest(mac, self._mac(call_id, expires, caller, server, tool)) or expires <= self._clock():
            raise refused
        parked = self._parked.get(call_id)
        if parked is None:
            raise refused
        return parked
