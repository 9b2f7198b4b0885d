"""`mcp-bridge auth login|logout NAME`: sign in to a downstream server that asks for OAuth, once.

Login runs the MCP SDK's OAuth client (discovery, dynamic registration or the developer's static
client id, PKCE S256, the `resource` parameter) with a callback on a loopback port of this
machine, prints the sign-in URL (and opens a browser where there is one), and keeps the tokens in
the state directory, where every bridge process finds them and refreshes them by itself.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser

import anyio

from bridge.cli.context import load_settings, open_bridge
from bridge.cli.errors import CliError, Exit
from bridge.downstream.connection import SessionSettings
from bridge.errors import BridgeError
from bridge.models import HttpServerSpec
from bridge.store.tokens import ServerTokens
from bridge.tools import signin
from bridge.tools.signin import LoopbackCallback
from bridge.wording import escaped


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


def _signing_in(server: str) -> tuple[str, HttpServerSpec, ServerTokens, SessionSettings]:
    """The registered HTTP server `server`, ready to connect, its sign-in, and how to reach it."""
    with open_bridge(load_settings()) as bridge:
        try:
            name, spec = bridge.resolve(server)
        except BridgeError as exc:
            raise CliError.from_result(exc.to_result()) from None
        if not isinstance(spec, HttpServerSpec):
            raise CliError(f"{name} is a stdio server; only HTTP servers sign in with OAuth")
        return name, spec, bridge.tokens(name, spec), bridge.sessions.settings


def sign_in(args: argparse.Namespace) -> int:
    name, spec, tokens, settings = _signing_in(args.name)
    try:
        callback = LoopbackCallback(args.port)
    except OSError as exc:
        raise CliError(f"cannot listen for the sign-in on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None

    async def show(url: str) -> None:
        print(f"Open this URL to sign in to {name}:\n  {escaped(url)}", file=sys.stderr, flush=True)
        if not args.no_browser:
            webbrowser.open(url)

    try:
        anyio.run(signin.sign_in, name, spec, tokens, settings, callback, show)
    except signin.SignInFailed as exc:
        raise CliError(f"signing in to {name} failed: {exc}", Exit.DOWNSTREAM) from None
    finally:
        callback.close()
    print(f"signed in to {name}; every bridge process now uses and refreshes the tokens kept in {tokens.path}")
    return 0


def sign_out(args: argparse.Namespace) -> int:
    name, _, tokens, _ = _signing_in(args.name)
    print(f"signed out of {name}" if tokens.forget() else f"{name} had no sign-in")
    return 0
