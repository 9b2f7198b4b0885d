"""`BridgeOAuthProvider`: FastMCP's `OAuthProvider` backed by the state file, for one owner.

Taken from FastMCP and the MCP SDK unchanged: the `/authorize`, `/token`, `/register` and
`/revoke` handlers (PKCE S256 only, exact redirect URI match, code and refresh grants), RFC 8414
and RFC 9728 metadata routes, the bearer middleware and its `401` with `WWW-Authenticate`.

Written here, and why:
- storage in the state file (`store.py`), so tokens survive a restart and a revocation made by
  another process holds on the next request;
- the owner's consent by pairing code (`consent.py`) instead of an automatic approval;
- opaque random tokens, kept as SHA-256 hashes, rather than JWTs: every request is checked against
  the store anyway (revocation must bite at once), so a signed token would add a signing key to
  protect and a self-describing token to leak, and gain nothing;
- tokens bound to this bridge's `/mcp` URL: a `resource` naming anything else is refused at
  `/authorize` and `/token`, and a token whose resource is not this server's is not accepted;
- public clients only: a dynamic registration asking for a client secret gets
  `token_endpoint_auth_method: none` instead (RFC 7591 lets the server substitute), so no client
  secret is ever stored; PKCE protects the code;
- everything a stranger can make it read or keep bounded, oldest unused evicted first, so a flood
  cannot lock the owner out (`limits.py`);
- refresh tokens on every grant, rotated on each use; a rotated token used again revokes its
  family;
- metadata that says so: `token_endpoint_auth_methods_supported: ["none"]`,
  `client_id_metadata_document_supported: true`, `scopes_supported: ["offline_access"]`, and the
  OpenID-style and root protected-resource aliases that some clients try.
"""

from __future__ import annotations

import logging
import secrets
import time

from fastmcp.server.auth.auth import AccessToken, OAuthProvider, TokenHandler
from fastmcp.server.auth.cimd import CIMDFetchError
from fastmcp.server.dependencies import get_http_request
from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.handlers.token import TokenErrorResponse
from mcp.server.auth.json_response import PydanticJSONResponse
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.provider import (
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.server.auth.routes import (
    build_metadata,
    build_resource_metadata_url,
    cors_middleware,
    validate_issuer_url,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl, ValidationError
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bridge.host.oauth.cimd import DEFAULT_SCOPE, CIMDClients
from bridge.host.oauth.consent import CONSENT_PATH, ConsentFlow
from bridge.host.oauth.limits import (
    MAX_CLIENTS,
    MAX_CODE_CHALLENGE,
    MAX_STATE,
    MAX_UNUSED_CLIENTS_PER_SOURCE,
    BodyLimit,
    metadata_problem,
    request_source,
)
from bridge.host.oauth.redirects import redirect_uris_problem
from bridge.host.oauth.settings import OAuthSettings
from bridge.host.oauth.state import ClientRecord, OAuthState, TokenRecord, digest
from bridge.host.oauth.store import OAuthStore, StoreUnreadable

logger = logging.getLogger("mcp_bridge.oauth")

# A CIMD document is read again after this long; until then the stored copy serves.
CIMD_REFRESH_S = 3600
# A rotated refresh token is remembered this long, to recognise its reuse.
ROTATED_KEEP_S = 7 * 86400
# How often a client's "last used" time is written from the request path.
LAST_USED_EVERY_S = 300
_ACCESS_PREFIX = "mcpb_at_"
_REFRESH_PREFIX = "mcpb_rt_"
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"
OPENID_METADATA_PATH = "/.well-known/openid-configuration"
ROOT_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"
# The endpoints that read a body a stranger sends.
BOUNDED_PATHS = frozenset({"/register", "/token", "/revoke", "/authorize", CONSENT_PATH})


class BridgeOAuthProvider(OAuthProvider):
    """One owner's authorization server and the bridge's resource server in one."""

    def __init__(self, settings: OAuthSettings) -> None:
        super().__init__(
            base_url=settings.base_url,
            client_registration_options=ClientRegistrationOptions(enabled=True, default_scopes=[DEFAULT_SCOPE]),
            revocation_options=RevocationOptions(enabled=True),
        )
        self.settings = settings
        self.store = OAuthStore(settings.state_dir)
        self.consent = ConsentFlow(settings, self.store)
        self.cimd = CIMDClients(settings)

    @property
    def scopes_supported(self) -> list[str]:
        return [DEFAULT_SCOPE]

    # -- the store -----------------------------------------------------------------------------

    async def _read(self) -> OAuthState:
        try:
            return await self.store.read_async()
        except StoreUnreadable as exc:
            logger.error("OAuth: %s; no token is accepted until it is fixed or removed", exc)
            return OAuthState()

    def resource_matches(self, resource: str | None) -> bool:
        """Whether a requested `resource` names this bridge's MCP endpoint (absent means it does)."""
        if resource is None:
            return True
        if self._resource_url is None:
            return False
        try:
            given = str(AnyHttpUrl(resource))
        except ValidationError:
            return False
        return given.removesuffix("/") == str(self._resource_url).removesuffix("/")

    # -- clients -------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        record = (await self._read()).clients.get(client_id)
        if not self.cimd.names_document(client_id):
            return record.info if record else None
        if record and record.fetched_at and time.time() - record.fetched_at < CIMD_REFRESH_S:
            return record.info
        try:
            info = await self.cimd.resolve(client_id)
        except CIMDFetchError as exc:
            logger.warning("OAuth: CIMD document %s unreachable (%s); using the copy kept", client_id, exc)
            return record.info if record else None
        if info is None:
            return None

        problem = metadata_problem(info)
        if problem:
            logger.warning("OAuth: CIMD document %r refused: %s", client_id, problem)
            return None
        source = request_source(_current_request())

        def keep(state: OAuthState) -> bool:
            now = time.time()
            known = state.clients.get(client_id)
            record = ClientRecord(
                info=info,
                kind="cimd",
                registered_at=known.registered_at if known else now,
                last_used_at=known.last_used_at if known else None,
                fetched_at=now,
                source=known.source if known else source,
            )
            return state.admit_client(client_id, record, MAX_CLIENTS, MAX_UNUSED_CLIENTS_PER_SOURCE)

        if not await self.store.change(keep):
            logger.warning("OAuth: CIMD client %s refused: too many clients are registered", client_id)
            return None
        return info

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        problem = redirect_uris_problem(
            [str(uri) for uri in client_info.redirect_uris or []], self.settings.allowed_redirect_uri_patterns
        )
        if problem:
            raise RegistrationError("invalid_redirect_uri", problem)
        problem = metadata_problem(client_info)
        if problem:
            raise RegistrationError("invalid_client_metadata", problem)
        # The SDK's handler answers with this very object, so the substitution reaches the client.
        client_info.token_endpoint_auth_method = "none"
        client_info.client_secret = None
        client_info.client_secret_expires_at = None

        record = ClientRecord(
            info=client_info, kind="dcr", registered_at=time.time(), source=request_source(_current_request())
        )

        def add(state: OAuthState) -> bool:
            return state.admit_client(client_info.client_id, record, MAX_CLIENTS, MAX_UNUSED_CLIENTS_PER_SOURCE)

        if not await self.store.change(add):
            raise RegistrationError(
                "invalid_client_metadata",
                f"All {MAX_CLIENTS} clients this bridge keeps are in use; its owner can free one with "
                "`mcp-bridge auth revoke`.",
            )

    # -- authorization -------------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if not self.resource_matches(params.resource):
            raise AuthorizeError("invalid_target", f"This server is the resource {self._resource_url}.")
        if len(params.state or "") > MAX_STATE or len(params.code_challenge) > MAX_CODE_CHALLENGE:
            raise AuthorizeError(
                "invalid_request", f"state is limited to {MAX_STATE} characters, code_challenge to {MAX_CODE_CHALLENGE}."
            )
        return await self.consent.open(client, params, request_source(_current_request()))

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        key = digest(authorization_code)
        record = (await self._read()).codes.get(key)
        if record is None or record.client_id != client.client_id:
            return None
        if record.used:
            await self._revoke_family(record.family, "an authorization code was used twice")
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=record.scopes,
            expires_at=record.expires_at,
            client_id=record.client_id,
            code_challenge=record.code_challenge,
            redirect_uri=AnyUrl(record.redirect_uri),
            redirect_uri_provided_explicitly=record.redirect_uri_provided_explicitly,
            resource=record.resource,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        key = digest(authorization_code.code)

        def exchange(state: OAuthState) -> OAuthToken | None:
            record = state.codes.get(key)
            if record is None or record.used or record.client_id not in state.clients:
                return None
            record.used = True
            return self._issue(state, record.client_id, record.family, record.scopes)

        # Steps return refusals rather than raise them: what a step changed is written either way.
        tokens = await self.store.change(exchange)
        if tokens is None:
            raise TokenError("invalid_grant", "authorization code does not exist")
        return tokens

    # -- tokens --------------------------------------------------------------------------------

    def _issue(self, state: OAuthState, client_id: str, family: str, scopes: list[str]) -> OAuthToken:
        """A new access and refresh token in `family`, bound to this bridge's MCP URL."""
        now = int(time.time())
        access = _ACCESS_PREFIX + secrets.token_urlsafe(32)
        refresh = _REFRESH_PREFIX + secrets.token_urlsafe(32)
        resource = str(self._resource_url)
        state.tokens[digest(access)] = TokenRecord(
            kind="access", client_id=client_id, family=family, scopes=scopes, resource=resource,
            expires_at=now + self.settings.access_token_ttl_s,
        )
        state.tokens[digest(refresh)] = TokenRecord(
            kind="refresh", client_id=client_id, family=family, scopes=scopes, resource=resource,
            expires_at=now + self.settings.refresh_token_ttl_s,
        )
        state.clients[client_id].last_used_at = now
        return OAuthToken(
            access_token=access,
            expires_in=self.settings.access_token_ttl_s,
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )

    async def _revoke_family(self, family: str, why: str) -> None:
        logger.warning("OAuth: %s; revoking every token of that authorization", why)
        await self.store.change(lambda state: state.revoke_family(family))

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        record = (await self._read()).tokens.get(digest(refresh_token))
        if record is None or record.kind != "refresh" or record.client_id != client.client_id:
            return None
        if record.rotated:
            why = f"a rotated refresh token of client {client.client_id!r} was reused"
            await self._revoke_family(record.family, why)
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=record.client_id,
            scopes=record.scopes,
            expires_at=record.expires_at,
            resource=record.resource,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        key = digest(refresh_token.token)

        def rotate(state: OAuthState) -> OAuthToken | None:
            record = state.tokens.get(key)
            if record is None or record.client_id not in state.clients:
                return None
            if record.rotated:  # a concurrent refresh won the race: this is a reuse
                state.revoke_family(record.family)
                return None
            now = int(time.time())
            record.rotated = True
            record.expires_at = min(record.expires_at, now + ROTATED_KEEP_S)
            state.tokens = {
                k: v for k, v in state.tokens.items() if not (v.family == record.family and v.kind == "access")
            }
            return self._issue(state, record.client_id, record.family, scopes)

        tokens = await self.store.change(rotate)
        if tokens is None:
            raise TokenError("invalid_grant", "refresh token is not valid")
        return tokens

    async def load_access_token(self, token: str) -> AccessToken | None:
        state = await self._read()
        record = state.tokens.get(digest(token))
        now = time.time()
        if (
            record is None
            or record.kind != "access"
            or record.expires_at <= now
            or record.client_id not in state.clients
            or self._resource_url is None
            or record.resource != str(self._resource_url)
        ):
            return None
        last_used = state.clients[record.client_id].last_used_at
        if last_used is None or now - last_used > LAST_USED_EVERY_S:
            await self.store.change(lambda s: _touch(s, record.client_id, now))
        return AccessToken(
            token=token,
            client_id=record.client_id,
            scopes=record.scopes,
            expires_at=record.expires_at,
            resource=record.resource,
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        record = (await self._read()).tokens.get(digest(token.token))
        if record is not None:
            await self.store.change(lambda state: state.revoke_family(record.family))

    # -- routes ---------------------------------------------------------------------------------

    def get_middleware(self) -> list[Middleware]:
        """FastMCP's authentication middleware, behind a bound on the OAuth endpoints' bodies."""
        return [Middleware(BodyLimit, paths=BOUNDED_PATHS), *super().get_middleware()]

    # -- routes --------------------------------------------------------------------------------

    def get_routes(self, mcp_path: str | None = None) -> list[Route]:
        """FastMCP's routes with this server's metadata and token endpoint, plus the consent page."""
        routes = super().get_routes(mcp_path)
        metadata_endpoint = cors_middleware(MetadataHandler(self._metadata()).handle, ["GET", "OPTIONS"])
        token_endpoint = cors_middleware(
            ResourceBoundTokenHandler(provider=self, client_authenticator=ClientAuthenticator(self)).handle,
            ["POST", "OPTIONS"],
        )
        replaced: list[Route] = []
        for route in routes:
            if route.path == AS_METADATA_PATH:
                route = Route(AS_METADATA_PATH, endpoint=metadata_endpoint, methods=["GET", "OPTIONS"])
            elif route.path == "/token":
                route = Route("/token", endpoint=token_endpoint, methods=["POST", "OPTIONS"])
            replaced.append(route)
        replaced.append(Route(OPENID_METADATA_PATH, endpoint=metadata_endpoint, methods=["GET", "OPTIONS"]))
        resource_metadata_path = build_resource_metadata_url(self._resource_url).path
        if resource_metadata_path != ROOT_RESOURCE_METADATA_PATH:
            served = next(r for r in replaced if r.path == resource_metadata_path)
            replaced.append(Route(ROOT_RESOURCE_METADATA_PATH, endpoint=served.endpoint, methods=served.methods))
        replaced.append(Route(CONSENT_PATH, endpoint=self.consent.handle, methods=["GET", "POST"]))
        return replaced

    def _metadata(self) -> OAuthMetadata:
        metadata = build_metadata(self.base_url, None, self.client_registration_options, self.revocation_options)
        metadata.issuer = self.issuer_url
        metadata.scopes_supported = [DEFAULT_SCOPE]
        metadata.token_endpoint_auth_methods_supported = ["none"]
        metadata.revocation_endpoint_auth_methods_supported = ["none"]
        metadata.client_id_metadata_document_supported = True
        return metadata


class ResourceBoundTokenHandler(TokenHandler):
    """FastMCP's token endpoint, refusing a `resource` other than this bridge (RFC 8707 `invalid_target`)."""

    provider: BridgeOAuthProvider

    async def handle(self, request: Request) -> Response:
        form = await request.form()
        for resource in form.getlist("resource"):
            if not isinstance(resource, str) or not self.provider.resource_matches(resource):
                return PydanticJSONResponse(
                    content=TokenErrorResponse(
                        error="invalid_target", error_description="Tokens are issued for this bridge only."
                    ),
                    status_code=400,
                    headers={"Cache-Control": "no-store", "Pragma": "no-cache"},
                )
        return await super().handle(request)


def _current_request() -> Request | None:
    """The HTTP request being served (FastMCP keeps it in a context variable), or None outside one."""
    try:
        return get_http_request()
    except RuntimeError:
        return None


def _touch(state: OAuthState, client_id: str, now: float) -> None:
    if client_id in state.clients:
        state.clients[client_id].last_used_at = now


def build_oauth_provider(settings: OAuthSettings) -> BridgeOAuthProvider:
    """The provider to pass as `FastMCP(auth=...)`; refuses a base URL that is not https or loopback."""
    validate_issuer_url(AnyHttpUrl(str(settings.base_url)))
    return BridgeOAuthProvider(settings)
