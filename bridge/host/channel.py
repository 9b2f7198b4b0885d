"""The way back up to the host for one `mcp_call_tool` request: a `HostChannel` per protocol era.

Everything is taken from the FastMCP context while the request is being handled (its session, its
request id, its progress token, what the host declared), because the relay calls the channel from
other tasks, where FastMCP's context variables are not set, and in HTTP mode from the worker loop:
each send then hops to the loop serving the host.

- Handshake era: asks go up as the host's own server-initiated requests, on the request's stream.
- 2026-07-28: the host takes no requests from a server; `defers_asks` tells the bridge to answer
  the call with `input_required` instead (`bridge.tools.parked`). Progress and logs (when the
  request opted in) still flow on the request's stream.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp_types as types
from fastmcp import Context
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from bridge import internals
from bridge.downstream.relay import Abilities, Answer, Ask

T = TypeVar("T")


class FastMCPChannel:
    """One host request's channel (see the module); built inside the tool handler."""

    def __init__(self, ctx: Context) -> None:
        rc = ctx.request_context
        assert rc is not None, "a tool call always has a request context"
        self._session = rc.session
        self._request_id = rc.request_id
        self._loop = asyncio.get_running_loop()
        meta = rc.meta or {}
        self.defers_asks = rc.protocol_version in MODERN_PROTOCOL_VERSIONS
        if self.defers_asks:
            level = meta.get(LOG_LEVEL_META_KEY)
            can_ask = True  # through input_required
        else:
            level = internals.host_log_level(self._session)
            can_ask = self._session.can_send_request
        abilities = Abilities.of(self._session.client_capabilities, level if isinstance(level, str) else None)
        if not can_ask:
            abilities = Abilities(roots=abilities.roots, log_level=abilities.log_level)
        self._abilities = abilities
        self.caller = internals.caller_scope(ctx)

    @property
    def abilities(self) -> Abilities:
        return self._abilities

    @property
    def wants_progress(self) -> bool:
        """Always asked downstream: `report_progress` sends nothing when the host gave no progress
        token, and an in-process 2026-07-28 host's request carries its progress callback, not a token."""
        return True

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._on_host_loop(lambda: self._session.report_progress(progress, total, message))

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        async def send() -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await self._session.send_log_message(
                    level=params.level, data=params.data, logger=params.logger, related_request_id=self._request_id
                )

        await self._on_host_loop(send)

    async def ask(self, request: Ask) -> Answer:
        result_type: Any = types.ElicitResult
        if isinstance(request, types.CreateMessageRequest):
            wants_tools = bool(request.params.tools) or request.params.tool_choice is not None
            result_type = types.CreateMessageResultWithTools if wants_tools else types.CreateMessageResult
        metadata = ServerMessageMetadata(related_request_id=self._request_id)
        try:
            return await self._on_host_loop(lambda: self._session.send_request(request, result_type, metadata=metadata))
        except MCPError as exc:
            return exc.error

    async def _on_host_loop(self, send: Callable[[], Awaitable[T]]) -> T:
        """Run `send` on the loop serving the host (in HTTP mode the relay runs on the worker loop)."""
        if asyncio.get_running_loop() is self._loop:
            return await send()

        async def run() -> T:
            return await send()

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), self._loop))
