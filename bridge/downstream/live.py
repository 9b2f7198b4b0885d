"""One live session: what the pool (`bridge.downstream.pool`) knows of it, and the SDK client that
speaks for its host.

Kept apart from the pool, which decides when sessions open, are shared and close; here is what a
session advertises and where what its server sends goes.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext, IncomingMessage
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from bridge import __version__, internals
from bridge.downstream.connection import Connection
from bridge.downstream.relay import Abilities, CallRelay, roots_for
from bridge.models import ServerSpec

CLIENT_INFO = types.Implementation(name="mcp-bridge", version=__version__)


@dataclass(eq=False)
class Live:
    """A session the pool holds: its owner task's state, and the calls using it."""

    name: str
    connection: Connection
    abilities: Abilities
    client: Client | None = None
    calls: list[CallRelay] = field(default_factory=list)  # the calls running on it
    tools: dict[str, types.Tool] | None = None
    in_use: int = 0
    last_used: float = 0.0
    stopping: bool = False
    kill: bool = False
    wake: anyio.Event = field(default_factory=anyio.Event)
    awaits_release: bool = False  # the owner waits for the session's last caller to let go
    closed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def spec(self) -> ServerSpec:
        return self.connection.spec

    def touch(self) -> None:
        self.last_used = anyio.current_time()

    def request_stop(self, *, kill: bool) -> None:
        self.stopping = True
        self.kill = self.kill or kill
        self.wake.set()

    def relay(self) -> CallRelay:
        """Where what the server sends goes: the call running on the session, when there is just
        one (always so on an exclusive session); else a relay that declines asks, drops logs and
        answers roots (a shared session advertised no asks, and no call on it asked for logs)."""
        if len(self.calls) == 1:
            return self.calls[0]
        return CallRelay(
            channel=None, roots=functools.partial(roots_for, self.spec, self.connection.settings.workspace)
        )

    def free_for(self, spec: ServerSpec, abilities: Abilities) -> bool:
        if self.stopping or self.spec != spec or self.abilities != abilities:
            return False
        return not (abilities.exclusive and self.in_use)


def client_for(live: Live, mode: str, message_handler: Callable[[IncomingMessage], Awaitable[None]]) -> Client:
    """A client advertising exactly the host's abilities, whose callbacks reach the running call."""

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        return await live.relay().elicit(params)

    async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        return await live.relay().sample(params)

    async def list_roots(context: ClientRequestContext) -> types.ListRootsResult:
        return await live.relay().list_roots()

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        await live.relay().log(params)

    client = Client(
        live.connection.transport(),
        mode=mode,
        client_info=CLIENT_INFO,
        # No per-request clock: the pool's `_use` holds each operation's deadline, which stops while a
        # person answers an ask (an SDK request timeout would not).
        read_timeout_seconds=None,
        cache=None,
        message_handler=message_handler,
        # Every callback is set, so that a server asking beyond what was advertised gets a
        # proper answer (a decline, and a note for the model); the advertisement is exact.
        elicitation_callback=elicit,
        sampling_callback=sample,
        list_roots_callback=list_roots,
        logging_callback=log,
        log_level=live.abilities.log_level,
    )
    internals.advertise_exactly(client, live.abilities.capabilities())
    return client


async def set_log_level(live: Live, client: Client) -> None:
    """In the handshake era logs are asked for once per session (2026-07-28: per request)."""
    level = live.abilities.log_level
    if level is None or client.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return
    if client.server_capabilities.logging is None:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.set_logging_level(level)
