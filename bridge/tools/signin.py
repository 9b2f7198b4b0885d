"""Signing in to a downstream server that asks for OAuth: the flow and its loopback callback.

Both the CLI (`mcp-bridge auth login`) and a serving bridge run it. A serving bridge that meets
`auth_required` starts it in the background and gives the model the sign-in URL (or, when the host
can open URLs, asks the host to open it); the browser comes back to a loopback port of this
machine, so it works where the browser runs beside the bridge (Claude Desktop, Claude Code).
The flow goes through the bridge's own connection to the server (`Connection.transport()`), so a
server the conversation added is dialled under the same SSRF rules, discovery and token requests
included.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthToken,
)

from bridge.downstream.connection import Connection, SessionSettings
from bridge.downstream.redaction import redact
from bridge.errors import BridgeError
from bridge.models import HttpServerSpec
from bridge.store.tokens import ServerTokens
from bridge.tools.oauth import LOOPBACK_CALLBACK, secrets_of, sign_in_auth, static_client
from bridge.wording import one_line

logger = logging.getLogger("mcp_bridge.signin")

SIGN_IN_TIMEOUT_S = 600.0
URL_TIMEOUT_S = 60.0  # for discovery and registration to produce the sign-in URL
_GIVEN_UP = "the sign-in was given up"


class SignInFailed(Exception):
    """The sign-in did not complete; the message says why and what to do."""


class NothingToSignIn(SignInFailed):
    """The server answered 401 but publishes no OAuth metadata anywhere the spec looks."""


class LoopbackCallback:
    """An HTTP listener on 127.0.0.1 for the authorization redirects of one sign-in: every one of
    them (a flow may authorize more than once), each handed to `wait()` in turn."""

    def __init__(self, port: int = 0) -> None:
        self._arrivals: queue.Queue[AuthorizationCodeResult | str] = queue.Queue()
        self.came_back = False  # the browser reached the callback: the user has done their part
        callback = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                query = {key: values[0] for key, values in parse_qs(urlsplit(self.path).query).items()}
                if "code" in query:
                    answer = AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))
                    callback._arrivals.put(answer)
                    body = b"Signed in. You can close this tab."
                else:
                    refusal = query.get("error_description") or query.get("error") or "no code in the redirect"
                    callback._arrivals.put(f"the authorization server refused: {refusal[:300]}")
                    body = b"Sign-in failed."
                callback.came_back = True
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:  # stdout may be the MCP wire
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # OSError when the port is taken
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _next(self) -> AuthorizationCodeResult | str:
        try:
            return self._arrivals.get(timeout=SIGN_IN_TIMEOUT_S)
        except queue.Empty:
            return f"no sign-in within {SIGN_IN_TIMEOUT_S:g} s"

    async def wait(self) -> AuthorizationCodeResult:
        """The next authorization's answer. Abandoned on cancel (a bridge closing mid-sign-in);
        `close()` wakes the thread it leaves."""
        arrived = await anyio.to_thread.run_sync(self._next, abandon_on_cancel=True)
        if isinstance(arrived, str):
            raise SignInFailed(arrived)
        return arrived

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._arrivals.put(_GIVEN_UP)


class _SignInStorage:
    """The token store as one sign-in sees it: the client it registers for its own callback is kept
    in memory until the tokens come, then both are stored. Two sign-ins under way, or one given up
    on, never leave a registration for another callback in the store."""

    def __init__(self, store: ServerTokens) -> None:
        self._store = store
        self._client: OAuthClientInformationFull | None = None
        self._signed_in = False

    @property
    def signed_in(self) -> bool:
        return self._signed_in

    @property
    def expires_at(self) -> float | None:
        return self._store.expires_at if self._signed_in else None

    def refreshing(self) -> AbstractAsyncContextManager[None]:
        return self._store.refreshing()

    async def get_tokens(self) -> OAuthToken | None:
        return await self._store.get_tokens() if self._signed_in else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        if self._client is not None:
            await self._store.set_client_info(self._client)
        await self._store.set_tokens(tokens)
        self._signed_in = True

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info


def _oauth_error(text: str) -> str | None:
    """The OAuth error code a failed token or registration answer quoted (RFC 6749 §5.2), if any."""
    found = re.search(r'"error"\s*:\s*"([a-z_]{1,40})"', text)
    return found.group(1) if found else None


def _why(leaf: BaseException, name: str) -> str:
    """What failed, in words the user or the operator can act on (quoted text bounded)."""
    text = one_line(str(leaf), 300)
    entry = f"config.MCP_SERVERS[{name!r}]['oauth']"
    if isinstance(leaf, OAuthFlowError) and text.startswith("Protected resource "):
        return (
            f"the server's metadata names another resource ({text.removeprefix('Protected resource ')}): "
            "the URL may be wrong (it must be the MCP endpoint the metadata describes), or the server is misconfigured"
        )
    if isinstance(leaf, OAuthFlowError) and "issuer mismatch" in text:
        return f"the authorization server's metadata names another issuer ({text.partition(': ')[2]}); refused (RFC 8414)"
    code = _oauth_error(text)
    if isinstance(leaf, OAuthTokenError) and code == "invalid_client":
        return (
            f"the authorization server refused the client (invalid_client): the operator sets a pre-registered "
            f"client_id and client_secret (as ${{env:NAME}}) in {entry}"
        )
    if code in ("invalid_scope", "access_denied"):
        return f"the authorization server refused the scope or the access ({code}): check the scopes in {entry}"
    if isinstance(leaf, OAuthRegistrationError):
        return (
            f"the authorization server refused to register the bridge ({code or text}): it may offer no dynamic "
            f"registration; the operator sets a pre-registered client_id (and client_secret) in {entry}"
        )
    return text


async def sign_in(
    name: str,
    spec: HttpServerSpec,
    tokens: ServerTokens,
    settings: SessionSettings,
    callback: LoopbackCallback,
    show: Callable[[str], Awaitable[None]],
    step_up_scope: str | None = None,
) -> None:
    """Run the OAuth flow for `name` until its tokens are stored; `show(url)` hands the sign-in URL on
    (once per authorization; a flow may authorize again). `step_up_scope`: scopes to ask for besides
    what the server's challenge names (a 403 insufficient_scope asked for them)."""
    storage = _SignInStorage(tokens)
    shown: list[str] = []

    async def show_once(url: str) -> None:
        if storage.signed_in:  # a step-up after the tokens came is for the call that needs it to ask
            raise SignInFailed("signed in; the server asks for more scope")
        shown.append(url)
        await show(url)

    auth = sign_in_auth(
        spec,
        storage,
        callback.uri,
        static_client(spec.oauth, callback.uri),  # the operator's client: no registration
        redirect_handler=show_once,
        callback_handler=callback.wait,
        step_up_scope=step_up_scope,
    )
    connection = Connection(name, spec, settings, auth=lambda: auth)
    try:
        async with Client(connection.transport(), mode="auto") as session:
            await session.list_tools()
    except Exception as exc:  # any failure of the flow or the first request ends it, said plainly  # noqa: BLE001
        if storage.signed_in:
            return  # the tokens are stored; what the server makes of the first request is the call's to meet
        leaf = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        if isinstance(leaf, SignInFailed):
            raise leaf from None
        context = auth.context
        logger.debug("the sign-in to %s failed", name, exc_info=exc)
        found = context.protected_resource_metadata is not None or context.oauth_metadata is not None
        if not shown and not found and isinstance(leaf, OAuthRegistrationError):
            raise NothingToSignIn(
                "it publishes no OAuth metadata (no protected-resource metadata, no authorization server metadata at "
                "its origin) and registering at its origin failed, so no sign-in can answer its 401"
            ) from None
        if isinstance(leaf, OAuthFlowError):
            why = _why(leaf, name)
        else:
            why = connection.classify(exc).message
        raise SignInFailed(redact(BridgeError("auth_required", why), secrets_of(spec)).message) from None


class SignIns:
    """Sign-ins a serving bridge runs in the background, one per server at a time.

    `serve()` must run on the worker loop; `start()` returns the URL the user must open once the
    flow has one, and the flow goes on until the browser comes back (or `SIGN_IN_TIMEOUT_S`)."""

    def __init__(self, settings: SessionSettings) -> None:
        self._settings = settings
        self._tg: TaskGroup | None = None
        self._urls: dict[str, str] = {}  # the sign-in under way for each server: its latest URL
        self._callbacks: dict[str, LoopbackCallback] = {}  # and where its browser comes back
        self._ended: dict[str, anyio.Event] = {}  # set when that sign-in ends, done or not
        self._asked: dict[str, set[frozenset[str]]] = {}  # the step-up scopes each server was asked for
        self._failed: dict[str, str] = {}  # why each server's last sign-in failed, until it is said

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()

    async def _check_step_up(self, name: str, tokens: ServerTokens, scope: str) -> None:
        """Refuse a step-up that cannot help: the scope is granted already, or was asked for before
        (the server granted less). Each step-up must ask for more, so they are bounded."""
        wanted = frozenset(scope.split())
        held = await tokens.get_tokens()
        granted = frozenset((held.scope or "").split()) if held is not None else frozenset()
        asked = self._asked.setdefault(name, set())
        if wanted <= granted or wanted in asked:
            raise BridgeError(
                "http_error",
                f"The server {name!r} refuses the call for lack of scope ({scope or 'unnamed'}) although the sign-in "
                "asked for it: another sign-in cannot help. The user's account may lack that permission.",
                status=403,
                scope=scope,
            )
        asked.add(wanted)

    async def start(self, name: str, spec: HttpServerSpec, tokens: ServerTokens, step_up_scope: str | None = None) -> str:
        """The URL to open to sign in to `name`, starting the flow unless one is under way.

        Raises `BridgeError`: `http_error` when the server publishes no OAuth metadata, or a step-up
        cannot help; `auth_required` saying what failed when the flow cannot produce a URL."""
        if name in self._urls:
            return self._urls[name]
        assert self._tg is not None, "SignIns.serve() is not running"
        if step_up_scope is not None:
            await self._check_step_up(name, tokens, step_up_scope)
        static_client(spec.oauth, LOOPBACK_CALLBACK)  # a secret the environment lacks is said now
        ready, ended = anyio.Event(), anyio.Event()
        self._ended[name] = ended
        failure: list[SignInFailed] = []

        async def show(url: str) -> None:
            self._urls[name] = url
            ready.set()

        async def flow() -> None:
            callback = self._callbacks[name] = LoopbackCallback()
            try:
                await sign_in(name, spec, tokens, self._settings, callback, show, step_up_scope)
            except SignInFailed as exc:
                failure.append(exc)
            except BridgeError as exc:  # the connection's own refusal (SSRF, a secret unset meanwhile)
                failure.append(SignInFailed(exc.message))
            finally:
                if failure and name in self._urls:  # the user had the URL: the next call says why it failed
                    logger.info("signing in to %s failed: %s", name, failure[0])
                    self._failed[name] = str(failure[0])
                callback.close()
                self._urls.pop(name, None)
                self._callbacks.pop(name, None)
                ready.set()
                ended.set()

        self._tg.start_soon(flow)
        with anyio.move_on_after(URL_TIMEOUT_S):
            await ready.wait()
        if name not in self._urls:
            if failure and isinstance(failure[0], NothingToSignIn):
                raise BridgeError(
                    "http_error",
                    f"The server {name!r} answered HTTP 401, but {failure[0]}. Check the URL and the headers "
                    "(e.g. Authorization) registered for it.",
                    status=401,
                )
            why = str(failure[0]) if failure else f"no sign-in URL within {URL_TIMEOUT_S:g} s"
            raise BridgeError("auth_required", f"Signing in to {name!r} could not start: {why}.")
        return self._urls[name]

    def last_failure(self, name: str) -> str | None:
        """Why the last sign-in to `name` failed after its URL was handed out, said once."""
        return self._failed.pop(name, None)

    async def finishing(self, name: str, seconds: float) -> bool:
        """Whether a sign-in to `name` was under way with the user back from the browser; if so,
        it is waited for (at most `seconds`), so a call made right after signing in goes through."""
        callback = self._callbacks.get(name)
        if callback is None or not callback.came_back:
            return False
        await self.wait(name, seconds)
        return True

    async def wait(self, name: str, seconds: float) -> None:
        """Until the sign-in to `name` under way ends (signed in or failed), at most `seconds`."""
        ended = self._ended.get(name)
        if ended is not None:
            with anyio.move_on_after(seconds):
                await ended.wait()
