"""The sign-in glue: a server's stored OAuth tokens sign its sessions in, and an `auth_required`
from an HTTP server starts the sign-in and says how to finish it.

Mixed into `Bridge`; the methods reach its settings and sign-ins.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import httpx2
import mcp_types as types

from bridge.downstream.relay import CallRelay
from bridge.errors import BridgeError
from bridge.models import HttpServerSpec, ServerSpec
from bridge.store.tokens import ServerTokens
from bridge.tools.oauth import session_auth

if TYPE_CHECKING:
    from bridge.tools.bridge import Bridge

T = TypeVar("T")


class Signing:
    """Mixed into `Bridge`: a server's sign-in, kept and started."""

    def tokens(self: Bridge, name: str, spec: HttpServerSpec) -> ServerTokens:
        """The OAuth sign-in kept for the server `name` at its URL (maybe none yet)."""
        return ServerTokens(self.settings.tokens_dir, name, spec.url)

    def _signed_in(self: Bridge, name: str, spec: ServerSpec) -> httpx2.Auth | None:
        """What signs a new session's requests in: the server's stored OAuth tokens, if it has any,
        or the operator's client credentials. They are the server's own, never the host's, and bound
        to the URL they were issued for."""
        if not isinstance(spec, HttpServerSpec):
            return None
        return session_auth(spec, self.tokens(name, spec))

    async def _signing_in(
        self: Bridge, name: str, spec: ServerSpec, relay: CallRelay, operation: Callable[[], Awaitable[T]]
    ) -> T:
        """Run `operation` on the worker loop; an `auth_required` from an HTTP server is given the
        sign-in URL, which starts the sign-in in the background. A call made while the user is back
        from the browser waits for that sign-in to end, then goes on signed in."""
        await self.sign_ins.finishing(name, self.settings.timeout)
        for attempt in (1, 2):
            try:
                return await operation()
            except BridgeError as exc:
                if exc.code != "auth_required" or not isinstance(spec, HttpServerSpec) or "command" not in exc.detail:
                    raise  # not a sign-in the user can make (client credentials, a missing secret)
                if attempt == 1 and await self.sign_ins.finishing(name, self.settings.timeout):
                    continue
                needed, opened_by_host = await self._sign_in_needed(name, spec, relay, exc)
                if attempt == 1 and opened_by_host and self.tokens(name, spec).signed_in:
                    continue  # the user signed in through the host: the call goes on
                raise needed from None
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def _sign_in_needed(
        self: Bridge, name: str, spec: HttpServerSpec, relay: CallRelay, error: BridgeError
    ) -> tuple[BridgeError, bool]:
        """`auth_required`, with the URL that signs the user in (the flow runs on in the background,
        its callback on a loopback port of this machine), and whether the host opened it: a host
        that can open URLs is asked to. A 403 asking for more scope asks the same way, for more.
        The flow's own refusal (`http_error`: nothing to sign in to, or a step-up that cannot help)
        is the answer instead."""
        scope = error.detail.get("scope")
        failed = self.sign_ins.last_failure(name)
        said = f"The last sign-in failed: {failed}. " if failed else ""
        try:
            url = await self.sign_ins.start(name, spec, self.tokens(name, spec), scope)
        except BridgeError as exc:
            if exc.code != "auth_required":
                return exc, False
            return BridgeError("auth_required", f"{said}{error.message} ({exc.message})", **error.detail), False
        opened = False
        if relay.abilities.elicit_url:
            answer = await relay.elicit_for_bridge(
                types.ElicitRequestURLParams(
                    mode="url", message=f"Sign in to {name} for the bridge", url=url, elicitation_id=uuid.uuid4().hex
                )
            )
            opened = isinstance(answer, types.ElicitResult) and answer.action == "accept"
            if opened:
                await self.sign_ins.wait(name, self.settings.timeout)
        more = f" with more scope ({scope})" if scope else ""
        needed = BridgeError(
            "auth_required",
            f"{said}The server {name!r} needs the user to sign in with OAuth{more}. Ask the user to open {url} in a browser "
            f"on the machine running the bridge (or to run `mcp-bridge auth login {name}` there), then call again.",
            url=url,
            **error.detail,
        )
        return needed, opened
