"""`mcp-bridge auth pending|clients|revoke CLIENT`: the owner's side of the built-in OAuth server,
and `auth login|logout NAME` (`bridge.cli.signin`): the bridge's own sign-in to downstream servers.

The owner's steps read and write the state directory the serving bridge uses (`MCP_STATE_DIR`), so they work
from any terminal while it runs; a revocation holds on the serving bridge's very next request.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from bridge.cli import signin
from bridge.cli.context import load_settings
from bridge.cli.errors import CliError, Exit, add_command
from bridge.host.oauth import list_clients, list_pending, revoke_client
from bridge.host.oauth.store import StoreUnreadable
from bridge.wording import escaped, quoted

T = TypeVar("T")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    auth = add_command(
        commands,
        "auth",
        "OAuth: approve clients of the HTTP face (ChatGPT...); sign in to servers",
        "The built-in OAuth server's state, for its owner:\n\n"
        "  mcp-bridge auth pending         requests waiting for approval, newest first: name, pairing code\n"
        "  mcp-bridge auth clients         registered clients: name, redirect URI, last use\n"
        "  mcp-bridge auth revoke CLIENT   forget a client (ID or name) and every token it holds, at once\n"
        "  mcp-bridge auth login NAME      sign in to a downstream server that asks for OAuth\n"
        "  mcp-bridge auth logout NAME     forget that sign-in",
    )
    steps = auth.add_subparsers(title="steps", dest="step", metavar="STEP", required=True)
    steps.add_parser("pending", help="requests waiting for their pairing code").set_defaults(run=pending)
    steps.add_parser("clients", help="registered clients").set_defaults(run=clients)
    revoke = steps.add_parser("revoke", help="cut one client off")
    revoke.add_argument("client", metavar="CLIENT", help="a client ID or a name only one client has")
    revoke.set_defaults(run=revoke_one)
    signin.register_steps(steps)


def _when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment else "never"


def _unreadable(exc: StoreUnreadable) -> CliError:
    return CliError(f"the OAuth state cannot be read: {exc}", Exit.REGISTRY)


def _listed(read: Callable[[Path], list[T]], state_dir: Path, empty: str) -> list[T]:
    try:
        found = read(state_dir)
    except StoreUnreadable as exc:
        raise _unreadable(exc) from None
    if not found:
        print(empty)
    return found


def pending(args: argparse.Namespace) -> int:
    for request in _listed(list_pending, load_settings().state_dir, "No authorization request is waiting."):
        print(
            f"{request.name}  {request.pairing_code}  {quoted(request.client_name or request.client_id)} "
            f"-> {quoted(request.redirect_uri)} (client {quoted(request.client_id)}; until "
            f"{_when(request.expires_at)}, {request.attempts_left} attempts left)"
        )
    return 0


def clients(args: argparse.Namespace) -> int:
    for client in _listed(list_clients, load_settings().state_dir, "No client is registered."):
        print(
            f"{escaped(client.client_id)}  {quoted(client.client_name or '(no name)')} [{client.kind}] "
            f"redirect {', '.join(map(escaped, client.redirect_uris))}; last used {_when(client.last_used_at)}; "
            f"{client.active_tokens} active token(s)"
        )
    return 0


def revoke_one(args: argparse.Namespace) -> int:
    try:
        gone = revoke_client(load_settings().state_dir, args.client)
    except LookupError as exc:
        raise CliError(str(exc), Exit.NOT_FOUND) from None
    except StoreUnreadable as exc:
        raise _unreadable(exc) from None
    print(
        f"Revoked {escaped(gone.client_id)} ({quoted(gone.client_name or 'no name')}): "
        f"{gone.active_tokens} token(s) no longer work."
    )
    return 0
