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


class PendingRequest(BaseModel):
    """An authorization request waiting for the owner's pairing code (keyed by the request id's hash)."""

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
        """Forget what has expired, so the file stays small."""
        self.pending = {k: v for k, v in self.pending.items() if v.expires_at > now}
        self.codes = {k: v for k, v in self.codes.items() if v.expires_at > now}
        self.tokens = {k: v for k, v in self.tokens.items() if v.expires_at > now}

    def make_room_for_client(self, now: float, unused_after_s: float, most: int) -> bool:
        """Forget clients that never got a token within `unused_after_s`; whether one more fits under `most`.

        Registration is open to anyone who can reach the bridge, so what it may leave behind is bounded.
        """
        self.clients = {
            cid: rec for cid, rec in self.clients.items()
            if rec.last_used_at is not None or now - rec.registered_at < unused_after_s
        }
        return len(self.clients) < most

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
