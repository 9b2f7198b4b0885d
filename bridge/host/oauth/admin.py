"""What `mcp-bridge auth` shows and does, read from the state directory by any process.

`list_pending` (with the pairing codes), `list_clients`, `revoke_client`. A revocation takes effect
in running bridges on their next request: they validate every token against the state file.
"""

from __future__ import annotations

import difflib
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from bridge.host.oauth.state import ClientRecord, OAuthState
from bridge.host.oauth.store import OAuthStore
from bridge.wording import escaped, quoted


def _when(timestamp: float | None) -> datetime | None:
    return None if timestamp is None else datetime.fromtimestamp(timestamp, timezone.utc)


class PendingView(BaseModel):
    """A consent request waiting for its code."""

    name: str
    client_id: str
    client_name: str | None
    redirect_uri: str
    pairing_code: str
    expires_at: datetime
    attempts_left: int


class ClientView(BaseModel):
    """A registered client, as the owner sees it."""

    client_id: str
    client_name: str | None
    kind: str
    redirect_uris: list[str]
    registered_at: datetime
    last_used_at: datetime | None
    active_tokens: int


def _client_view(state: OAuthState, client_id: str, record: ClientRecord) -> ClientView:
    now = time.time()
    return ClientView(
        client_id=client_id,
        client_name=record.info.client_name,
        kind=record.kind,
        redirect_uris=[str(uri) for uri in record.info.redirect_uris or []],
        registered_at=_when(record.registered_at),
        last_used_at=_when(record.last_used_at),
        active_tokens=sum(
            1 for t in state.tokens.values() if t.client_id == client_id and t.expires_at > now and not t.rotated
        ),
    )


def list_pending(state_dir: Path) -> list[PendingView]:
    """Requests still waiting for the owner, newest first (the one just started is on top)."""
    now = time.time()
    waiting = sorted((p for p in OAuthStore(state_dir).read().pending.values() if p.expires_at > now),
                     key=lambda p: p.created_at, reverse=True)
    return [
        PendingView(
            name=p.name,
            client_id=p.client_id,
            client_name=p.client_name,
            redirect_uri=p.redirect_uri,
            pairing_code=p.pairing_code,
            expires_at=_when(p.expires_at),
            attempts_left=p.attempts_left,
        )
        for p in waiting
    ]


def list_clients(state_dir: Path) -> list[ClientView]:
    """Every known client, first registered first (not those the next write forgets: registered
    over a day ago and never paired)."""
    state = OAuthStore(state_dir).read().model_copy(deep=True)
    state.purge(time.time())
    ordered = sorted(state.clients.items(), key=lambda item: item[1].registered_at)
    return [_client_view(state, cid, record) for cid, record in ordered]


def revoke_client(state_dir: Path, client: str) -> ClientView:
    """Forget one client (by ID, or by a name only it has) and every token it holds.

    Raises LookupError when nothing or more than one client answers to `client`.
    """
    with OAuthStore(state_dir).update() as state:
        matches = [cid for cid in state.clients if cid == client] or [
            cid for cid, rec in state.clients.items() if rec.info.client_name == client
        ]
        if len(matches) != 1:
            names = [*state.clients, *(rec.info.client_name or "" for rec in state.clients.values())]
            close = difflib.get_close_matches(client, names, n=1, cutoff=0.6) if not matches else []
            found = "no client" if not matches else f"{len(matches)} clients ({', '.join(map(escaped, matches))})"
            meant = f"; did you mean {quoted(close[0])}?" if close else ""
            raise LookupError(f"{found} answer(s) to {quoted(client)}{meant}; give a client ID from `mcp-bridge auth clients`")
        view = _client_view(state, matches[0], state.clients[matches[0]])
        state.revoke_client(matches[0])
    return view
