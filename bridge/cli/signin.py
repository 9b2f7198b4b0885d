"""`mcp-bridge auth login|logout NAME`: sign in to a downstream server that asks for OAuth, once.

Login runs the MCP SDK's OAuth client (discovery, dynamic registration or the developer's static
client id, PKCE S256, the `resource` parameter) with a callback on a loopback port of this
machine, prints the sign-in URL (and opens a browser where there is one), and keeps the tokens in
the state directory, where every bridge process finds them and refreshes them by itself.
"""

from __future__ import annotations

import argparse
import sys
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull

from bridge.cli.context import load_settings, open_bridge
from bridge.cli.errors import CliError, Exit
from bridge.errors import BridgeError
from bridge.internals import StoredOAuth, create_mcp_http_client
from bridge.models import HttpServerSpec
from bridge.store.tokens import ServerTokens
from bridge.tools.oauth import oauth_client_metadata

SIGN_IN_TIMEOUT_S = 600.0


def register_steps(steps: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`auth login NAME` and `auth logout NAME`, beside the built-in OAuth server's steps."""
    login = steps.add_parser(
        "login",
        help="sign in to a registered HTTP server that asks for OAuth",
        description="Run the OAuth sign-in of a registered HTTP server: print the URL to open (and open a\n"
        "browser where there is one), wait for the sign-in on a loopback callback, and keep the tokens\n"
        "in the state directory, where every bridge process uses and refreshes them.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    login.add_argument("name", help="the server's registered name")
    login.add_argument("--no-browser", action="store_true", help="only print the URL")
    login.add_argument("--port", type=int, default=0, help="the loopback callback port (default: any free one)")
    login.set_defaults(run=sign_in)
    logout = steps.add_parser("logout", help="forget a server's sign-in")
    logout.add_argument("name", help="the server's registered name")
    logout.set_defaults(run=sign_out)


class _Callback:
    """A one-shot loopback HTTP listener for the authorization redirect."""

    def __init__(self, port: int) -> None:
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
                    body = b"Sign-in failed; see the terminal."
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.end_headers()
                self.wfile.write(body)
                callback.done.set()

            def log_message(self, *args: object) -> None:  # stdout is for the command's own output
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    async def wait(self) -> AuthorizationCodeResult:
        if not await anyio.to_thread.run_sync(self.done.wait, SIGN_IN_TIMEOUT_S):
            raise CliError(f"no sign-in within {SIGN_IN_TIMEOUT_S:g} s", Exit.DOWNSTREAM)
        if self.result is None:
            raise CliError(f"the sign-in failed: {self.error}", Exit.DOWNSTREAM)
        return self.result

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _signing_in(server: str) -> tuple[str, HttpServerSpec, ServerTokens]:
    """The registered HTTP server `server`, ready to connect, and its sign-in."""
    with open_bridge(load_settings()) as bridge:
        try:
            name, spec = bridge.resolve(server)
        except BridgeError as exc:
            raise CliError.from_result(exc.to_result()) from None
        if not isinstance(spec, HttpServerSpec):
            raise CliError(f"{name} is a stdio server; only HTTP servers sign in with OAuth")
        return name, spec, bridge.tokens(name, spec)


def sign_in(args: argparse.Namespace) -> int:
    name, spec, tokens = _signing_in(args.name)
    try:
        callback = _Callback(args.port)
    except OSError as exc:
        raise CliError(f"cannot listen for the sign-in on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    try:
        anyio.run(_sign_in, name, spec, tokens, callback, args.no_browser)
    finally:
        callback.close()
    print(f"signed in to {name}; every bridge process now uses and refreshes the tokens kept in {tokens.path}")
    return 0


async def _sign_in(name: str, spec: HttpServerSpec, tokens: ServerTokens, callback: _Callback, no_browser: bool) -> None:
    async def show(url: str) -> None:
        print(f"Open this URL to sign in to {name}:\n  {url}", file=sys.stderr, flush=True)
        if not no_browser:
            webbrowser.open(url)

    if spec.oauth is not None and spec.oauth.client_id:  # the developer's static client: no registration
        await tokens.set_client_info(
            OAuthClientInformationFull(client_id=spec.oauth.client_id, redirect_uris=[callback.uri], token_endpoint_auth_method="none")  # type: ignore[list-item]
        )
    auth = StoredOAuth(
        server_url=spec.url,
        client_metadata=oauth_client_metadata(spec, callback.uri),
        storage=tokens,
        redirect_handler=show,
        callback_handler=callback.wait,
    )
    client = create_mcp_http_client(headers=dict(spec.headers), auth=auth)
    try:
        async with client, Client(streamable_http_client(spec.url, http_client=client)) as session:
            await session.list_tools()
    except Exception as exc:  # any failure of the flow or the first request ends the command, said plainly  # noqa: BLE001
        leaf = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        if isinstance(leaf, CliError):
            raise leaf from None
        raise CliError(f"signing in to {name} failed: {type(leaf).__name__}: {leaf}", Exit.DOWNSTREAM) from None


def sign_out(args: argparse.Namespace) -> int:
    name, _, tokens = _signing_in(args.name)
    print(f"signed out of {name}" if tokens.forget() else f"{name} had no sign-in")
    return 0
