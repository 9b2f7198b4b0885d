"""The owner's consent: an authorization request waits until the owner types its pairing code.

`/authorize` (the SDK's handler, then `open`) files a pending request and sends the browser to
`/oauth/consent?request=<id>`. The bridge logs the request's short name ("amber-falcon") and pairing
code; the owner reads them there or with `mcp-bridge auth pending` (newest first) and types the code
of the name the page shows. A right code turns the request into
an authorization code and redirects to the client's registered redirect URI with `code` and
`state`; too many wrong codes or a code past its lifetime refuse the request (`access_denied`).

Why this is CSRF-safe: the form names its request by a 256-bit random id known only to the browser
that was sent to it, and a submission only succeeds with the code, which only the owner sees. The
page cannot be framed and is never cached.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time

from mcp.server.auth.provider import AuthorizationParams, construct_redirect_uri
from mcp.shared.auth import OAuthClientInformationFull
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from bridge.host.oauth.consent_page import consent_response, error_response
from bridge.host.oauth.limits import MAX_PENDING_PER_SOURCE
from bridge.host.oauth.request_names import new_request_name
from bridge.host.oauth.settings import OAuthSettings
from bridge.host.oauth.state import CodeRecord, OAuthState, PendingRequest, digest
from bridge.host.oauth.store import OAuthStore

logger = logging.getLogger("mcp_bridge.oauth")

CONSENT_PATH = "/oauth/consent"
# No 0/O, 1/I/L, U: a code read from a terminal is typed without doubt.
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"
_CODE_HALF = 4
MAX_LOGGED = 200  # characters of a client-chosen redirect URI in a log line


def new_pairing_code() -> str:
    """Eight characters from a 30-letter alphabet (about 39 bits), shown as XXXX-XXXX."""
    chars = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(2 * _CODE_HALF))
    return f"{chars[:_CODE_HALF]}-{chars[_CODE_HALF:]}"


def codes_match(typed: str, expected: str) -> bool:
    """Case, spaces and dashes do not matter; the comparison takes constant time."""
    def norm(code: str) -> bytes:
        return "".join(code.split()).replace("-", "").upper().encode()

    return hmac.compare_digest(norm(typed), norm(expected))


class ConsentFlow:
    """Files pending requests and serves the page that settles them."""

    def __init__(self, settings: OAuthSettings, store: OAuthStore) -> None:
        self.settings = settings
        self.store = store
        self.page_url = str(settings.base_url).rstrip("/") + CONSENT_PATH

    async def open(self, client: OAuthClientInformationFull, params: AuthorizationParams, source: str) -> str:
        """File the request, log its name and code, and return the consent page's URL for the browser.

        It ends the same client's earlier requests from the same source (abandoned: a client that
        starts again has given up on them) and, past the bounds, the oldest of the source holding
        the most (`limits.py`); it never refuses, so a flood cannot keep the owner from pairing.
        """
        request_id = secrets.token_urlsafe(32)
        now = time.time()
        pending = PendingRequest(
            source=source,
            client_id=client.client_id,
            client_name=client.client_name,
            redirect_uri=str(params.redirect_uri),
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            scopes=params.scopes or [],
            code_challenge=params.code_challenge,
            state=params.state,
            resource=params.resource,
            pairing_code=new_pairing_code(),
            created_at=now,
            expires_at=now + self.settings.pairing_code_ttl_s,
            attempts_left=self.settings.pairing_code_attempts,
        )

        def file(state: OAuthState) -> list[PendingRequest]:
            state.purge(now)
            pending.name = new_request_name({p.name for p in state.pending.values()})
            return state.admit_pending(
                digest(request_id), pending, self.settings.max_pending_requests, MAX_PENDING_PER_SOURCE
            )

        for ended in await self.store.change(file):
            logger.info("OAuth: request %s of client %r ended: a newer request took its place",
                        ended.name, ended.client_name or ended.client_id)
        # repr() keeps a client-chosen name from forging log lines.
        logger.warning(
            "OAuth: request %s: client %r (redirect %r) asks to connect; pairing code %s, valid %d min "
            "(also shown by `mcp-bridge auth pending`)",
            pending.name,
            pending.client_name or pending.client_id,
            pending.redirect_uri[:MAX_LOGGED],
            pending.pairing_code,
            max(1, round(self.settings.pairing_code_ttl_s / 60)),
        )
        return construct_redirect_uri(self.page_url, request=request_id)

    async def handle(self, request: Request) -> Response:
        """GET shows the form; POST checks the code."""
        if request.method == "GET":
            request_id = request.query_params.get("request", "")
            pending = (await self.store.read_async()).pending.get(digest(request_id))
            if pending is None:
                return error_response("This authorization request is unknown, finished or expired.", 404)
            if pending.expires_at <= time.time():
                return await self._refuse(request_id, pending, "The pairing code expired.")
            return consent_response(pending, request_id, self._action(request_id))
        form = await request.form()
        request_id = str(form.get("request", ""))
        return await self._submit(request_id, str(form.get("code", "")))

    def _action(self, request_id: str) -> str:
        return construct_redirect_uri(self.page_url, request=request_id)

    async def _submit(self, request_id: str, typed: str) -> Response:
        key = digest(request_id)
        now = time.time()

        def settle(state: OAuthState) -> tuple[str, PendingRequest | None, str | None]:
            pending = state.pending.get(key)
            if pending is None:
                return "unknown", None, None
            if pending.expires_at <= now:
                del state.pending[key]
                return "expired", pending, None
            if not codes_match(typed, pending.pairing_code):
                pending.attempts_left -= 1
                if pending.attempts_left <= 0:
                    del state.pending[key]
                    return "exhausted", pending, None
                return "wrong", pending, None
            del state.pending[key]
            code = secrets.token_urlsafe(32)
            state.codes[digest(code)] = CodeRecord(
                client_id=pending.client_id,
                redirect_uri=pending.redirect_uri,
                redirect_uri_provided_explicitly=pending.redirect_uri_provided_explicitly,
                scopes=pending.scopes,
                code_challenge=pending.code_challenge,
                resource=pending.resource,
                expires_at=now + self.settings.authorization_code_ttl_s,
                family=secrets.token_urlsafe(16),
            )
            return "approved", pending, code

        outcome, pending, code = await self.store.change(settle)
        if pending is None:
            return error_response("This authorization request is unknown, finished or expired.", 404)
        if outcome == "approved":
            logger.warning("OAuth: request %s: the owner allowed client %r", pending.name,
                           pending.client_name or pending.client_id)
            return _redirect(pending, code=code)
        if outcome == "wrong":
            left = f"That code is wrong; {pending.attempts_left} attempt(s) left."
            return consent_response(pending, request_id, self._action(request_id), left, status_code=400)
        reason = "Too many wrong pairing codes." if outcome == "exhausted" else "The pairing code expired."
        logger.warning("OAuth: request %s: refused client %r: %s", pending.name,
                       pending.client_name or pending.client_id, reason)
        return _redirect(pending, error="access_denied", error_description=reason)

    async def _refuse(self, request_id: str, pending: PendingRequest, reason: str) -> Response:
        """Drop the request and tell the client it was refused."""
        def drop(state: OAuthState) -> None:
            state.pending.pop(digest(request_id), None)

        await self.store.change(drop)
        return _redirect(pending, error="access_denied", error_description=reason)


def _redirect(pending: PendingRequest, **params: str | None) -> RedirectResponse:
    url = construct_redirect_uri(pending.redirect_uri, **params, state=pending.state)
    return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})
