"""What the authorization server remembers, as one pydantic document, and the pure steps on it.

Secrets are kept only as SHA-256 hashes: access and refresh tokens, authorization codes and
consent request ids are all 256-bit random values, so a plain hash cannot be reversed and needs no
salt. The one secret kept as is, the pairing code, must be shown to the owner by another process
(`mcp-bridge auth pending`); it lives minutes and guards a single request.

Tokens belong to a *family*: one authorization and every refresh that follows from it. Reusing a
rotated refresh token, or an authorization code twice, revokes its whole family (OAuth 2.1 §4.3.1).
"""

from __future__ import annotations

import hashlib
from typing import Literal

from mcp.shared.auth import OAuthClientInformationFull
from pydantic import BaseModel, Field

from bridge.host.oauth.limits import UNKNOWN_SOURCE, UNUSED_CLIENT_S


def digest(secret: str) -> str:
    """The key a secret is stored under."""
    return hashlib.sha256(secret.encode()).hexdigest()


class ClientRecord(BaseModel):
    """A client known to the server, by dynamic registration or by its metadata document."""

    info: OAuthClientInformationFull
    kind: Literal["dcr", "cimd"]
    registered_at: float
    last_used_at: float | None = None
    fetched_at: float | None = Field(default=None, description="When the CIMD document was last read.")
    source: str = Field(default=UNKNOWN_SOURCE, description="Who registered it (`limits.request_source`).")


class PendingRequest(BaseModel):
    """An authorization request waiting for the owner's pairing code (keyed by the request id's hash)."""

    name: str = Field(default="", description="A short name the page and `auth pending` both show.")
    source: str = UNKNOWN_SOURCE
    client_id: str
    client_name: str | None
    redirect_uri: str
    redirect_uri_provided_explicitly: bool
    scopes: list[str]
    code_challenge: str
    state: str | None
    resource: str | None
    pairing_code: str
    created_at: float
    expires_at: float
    attempts_left: int


class CodeRecord(BaseModel):
    """An authorization code issued after consent; one exchange, then it is spent."""

    client_id: str
    redirect_uri: str
    redirect_uri_provided_explicitly: bool
    scopes: list[str]
    code_challenge: str
    resource: str | None
    expires_at: float
    family: str
    used: bool = False


class TokenRecord(BaseModel):
    """An access or refresh token; a rotated refresh token is kept to recognise its reuse."""

    kind: Literal["access", "refresh"]
    client_id: str
    family: str
    scopes: list[str]
    resource: str
    expires_at: int
    rotated: bool = False


class OAuthState(BaseModel):
    """The whole file: clients, pending consents, codes and tokens."""

    version: Literal[1] = 1
    clients: dict[str, ClientRecord] = Field(default_factory=dict)
    pending: dict[str, PendingRequest] = Field(default_factory=dict)
    codes: dict[str, CodeRecord] = Field(default_factory=dict)
    tokens: dict[str, TokenRecord] = Field(default_factory=dict)

    def purge(self, now: float) -> None:
        """Forget what has expired, and clients that never got a token within `UNUSED_CLIENT_S`."""
        self.pending = {k: v for k, v in self.pending.items() if v.expires_at > now}
        self.codes = {k: v for k, v in self.codes.items() if v.expires_at > now}
        self.tokens = {k: v for k, v in self.tokens.items() if v.expires_at > now}
        for client_id in [c for c, rec in self.clients.items() if _stale(rec, now)]:
            self.revoke_client(client_id)

    def admit_client(self, client_id: str, record: ClientRecord, most: int, per_source: int) -> bool:
        """Keep `record`, making room by forgetting unused clients (module `limits`); False when
        every client kept has a token and none may go."""
        if client_id not in self.clients:
            own = self._unused(record.source)
            if len(own) >= per_source:
                self.revoke_client(own[0])
            while len(self.clients) >= most:
                unused = self._unused(None)
                if not unused:
                    return False
                waiting = self._waiting()
                tier = [cid for cid in unused if cid not in waiting] or unused
                by_source: dict[str, list[str]] = {}
                for cid in tier:
                    by_source.setdefault(self.clients[cid].source, []).append(cid)
                self.revoke_client(max(by_source.values(), key=len)[0])
        self.clients[client_id] = record
        return True

    def _waiting(self) -> dict[str, float]:
        """Clients with a consent request waiting, and when their newest was filed."""
        newest: dict[str, float] = {}
        for pending in self.pending.values():
            newest[pending.client_id] = max(newest.get(pending.client_id, 0.0), pending.created_at)
        return newest

    def _unused(self, source: str | None) -> list[str]:
        """Clients that never got a token (of `source`, or all): first those with no consent
        request waiting (forgetting a client ends its requests, whoever made them: a stranger who
        first named a public CIMD client must not end the owner's request by flooding), then the
        rest; each least recently active first."""
        waiting = self._waiting()
        unused = [
            cid for cid, rec in self.clients.items()
            if rec.last_used_at is None and (source is None or rec.source == source)
        ]
        return sorted(
            unused, key=lambda cid: (cid in waiting, max(self.clients[cid].registered_at, waiting.get(cid, 0.0)))
        )

    def admit_pending(self, key: str, pending: PendingRequest, most: int, per_source: int) -> list[PendingRequest]:
        """File `pending`; what it ends: the same client's earlier requests from the same source
        (abandoned), then the oldest of its source past `per_source`, then the oldest of the source
        holding the most past `most`."""
        ended = [k for k, p in self.pending.items() if (p.client_id, p.source) == (pending.client_id, pending.source)]
        gone = [self.pending.pop(k) for k in ended]
        own = sorted((k for k, p in self.pending.items() if p.source == pending.source),
                     key=lambda k: self.pending[k].created_at)
        gone += [self.pending.pop(k) for k in own[: max(0, len(own) - per_source + 1)]]
        while len(self.pending) >= most:
            by_source: dict[str, list[str]] = {}
            for k in sorted(self.pending, key=lambda k: self.pending[k].created_at):
                by_source.setdefault(self.pending[k].source, []).append(k)
            gone.append(self.pending.pop(max(by_source.values(), key=len)[0]))
        self.pending[key] = pending
        return gone

    def revoke_family(self, family: str) -> None:
        """Every token of one authorization, and the code it came from."""
        self.tokens = {k: v for k, v in self.tokens.items() if v.family != family}
        self.codes = {k: v for k, v in self.codes.items() if v.family != family}

    def revoke_client(self, client_id: str) -> bool:
        """The client and everything issued to it or waiting for it; whether it was known."""
        known = self.clients.pop(client_id, None) is not None
        self.tokens = {k: v for k, v in self.tokens.items() if v.client_id != client_id}
        self.codes = {k: v for k, v in self.codes.items() if v.client_id != client_id}
        self.pending = {k: v for k, v in self.pending.items() if v.client_id != client_id}
        return known


def _stale(record: ClientRecord, now: float) -> bool:
    """Registered over `UNUSED_CLIENT_S` ago and never given a token: a pairing never completed."""
    return record.last_used_at is None and now - record.registered_at >= UNUSED_CLIENT_S
