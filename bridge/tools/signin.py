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

import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthToken,
)

from bridge.downstream.connection import Connection, SessionSettings
from bridge.errors import BridgeError
from bridge.internals import StoredOAuth
from bridge.models import HttpServerSpec
from bridge.store.tokens import ServerTokens
from bridge.tools.oauth import oauth_client_metadata

SIGN_IN_TIMEOUT_S = 600.0
URL_TIMEOUT_S = 60.0  # for discovery and registration to produce the sign-in URL


class SignInFailed(Exception):
    """The sign-in did not complete; the message says why."""


class LoopbackCallback:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization redirect."""

    def __init__(self, port: int = 0) -> None:
        self.result: AuthorizationCodeResult | None = None
        self.error: str | None = None
        self.done = threading.Event()
        callback = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                query = {key: values[0] for key, values in parse_qs(urlsplit(self.path).query).items()}
                if "code" in query:
                    callback.result = AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))
                    body = b"Signed in. You can close this tab."
                else:
                    callback.error = query.get("error_description") or query.get("error") or "no code in the redirect"
                    body = b"Sign-in failed."
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.end_headers()
                self.wfile.write(body)
                callback.done.set()

            def log_message(self, *args: object) -> None:  # stdout may be the MCP wire
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # OSError when the port is taken
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    async def wait(self) -> AuthorizationCodeResult:
        # Abandoned on cancel (a bridge closing mid-sign-in); `close()` wakes the thread it leaves.
        if not await anyio.to_thread.run_sync(self.done.wait, SIGN_IN_TIMEOUT_S, abandon_on_cancel=True):
            raise SignInFailed(f"no sign-in within {SIGN_IN_TIMEOUT_S:g} s")
        if self.result is None:
            raise SignInFailed(f"the authorization server refused: {self.error}")
        return self.result

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if not self.done.is_set():
            self.error = "the sign-in was given up"
            self.done.set()


class _SignInStorage:
    """The token store as one sign-in sees it: the client it registers for its own callback is kept
    in memory until the tokens come, then both are stored. Two sign-ins under way, or one given up
    on, never leave a registration for another callback in the store."""

    def __init__(self, store: ServerTokens, client: OAuthClientInformationFull | None) -> None:
        self._store = store
        self._client = client
        self._signed_in = False

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


async def sign_in(
    name: str,
    spec: HttpServerSpec,
    tokens: ServerTokens,
    settings: SessionSettings,
    callback: LoopbackCallback,
    show: Callable[[str], Awaitable[None]],
) -> None:
    """Run the OAuth flow for `name` until its tokens are stored; `show(url)` hands the sign-in URL on."""
    static = None
    if spec.oauth is not None and spec.oauth.client_id:  # the developer's static client: no registration
        static = OAuthClientInformationFull(
            client_id=spec.oauth.client_id, redirect_uris=[callback.uri], token_endpoint_auth_method="none"  # type: ignore[list-item]
        )
    auth = StoredOAuth(
        server_url=spec.url,
        client_metadata=oauth_client_metadata(spec, callback.uri),
        storage=_SignInStorage(tokens, static),
        redirect_handler=show,
        callback_handler=callback.wait,
    )
    connection = Connection(name, spec, settings, auth=lambda: auth)
    try:
        async with Client(connection.transport(), mode="auto") as session:
            await session.list_tools()
    except Exception as exc:  # any failure of the flow or the first request ends it, said plainly  # noqa: BLE001
        leaf = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        if isinstance(leaf, SignInFailed):
            raise leaf from None
        raise SignInFailed(connection.classify(exc).message) from None


class SignIns:
    """Sign-ins a serving bridge runs in the background, one per server at a time.

    `serve()` must run on the worker loop; `start()` returns the URL the user must open once the
    flow has one, and the flow goes on until the browser comes back (or `SIGN_IN_TIMEOUT_S`)."""

    def __init__(self, settings: SessionSettings) -> None:
        self._settings = settings
        self._tg: TaskGroup | None = None
        self._urls: dict[str, str] = {}  # the sign-in under way for each server: its URL
        self._ended: dict[str, anyio.Event] = {}  # set when that sign-in ends, done or not

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await anyio.sleep_forever()

    async def start(self, name: str, spec: HttpServerSpec, tokens: ServerTokens) -> str:
        """The URL to open to sign in to `name`, starting the flow unless one is under way."""
        if name in self._urls:
            return self._urls[name]
        assert self._tg is not None, "SignIns.serve() is not running"
        ready, ended = anyio.Event(), anyio.Event()
        self._ended[name] = ended
        failure: list[str] = []

        async def show(url: str) -> None:
            self._urls[name] = url
            ready.set()

        async def flow() -> None:
            callback = LoopbackCallback()
            try:
                await sign_in(name, spec, tokens, self._settings, callback, show)
            except SignInFailed as exc:
                failure.append(str(exc))
            finally:
                callback.close()
                self._urls.pop(name, None)
                ready.set()
                ended.set()

        self._tg.start_soon(flow)
        with anyio.move_on_after(URL_TIMEOUT_S):
            await ready.wait()
        if name not in self._urls:
            why = failure[0] if failure else f"no sign-in URL within {URL_TIMEOUT_S:g} s"
            raise BridgeError("auth_required", f"Signing in to {name!r} could not start: {why}.")
        return self._urls[name]

    async def wait(self, name: str, seconds: float) -> None:
        """Until the sign-in to `name` under way ends (signed in or failed), at most `seconds`."""
        ended = self._ended.get(name)
        if ended is not None:
            with anyio.move_on_after(seconds):
                await ended.wait()
