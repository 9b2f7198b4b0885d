"""Who the bridge is when it signs in to a downstream server, and the SDK provider that does it.

Without an `oauth` entry the bridge registers itself (dynamic client registration) and the user
signs in. The operator may set one up in `config.MCP_SERVERS` (`bridge.models.OAuthClient`): a
pre-registered client (its secret by `${env:NAME}` reference, read here when a connection is made
and held in memory only), a client ID metadata document URL (CIMD), or the client-credentials
grant (a secret, or a private key that signs a JWT assertion), which needs no user at all.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal

import httpx2
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from mcp.shared.exceptions import MCPDeprecationWarning

from bridge import __version__
from bridge.errors import BridgeError
from bridge.internals import SharedTokenStorage, StoredOAuth
from bridge.models import HttpServerSpec, OAuthClient, env_reference
from bridge.store.tokens import ServerTokens

# What the CLI's sign-in listens on; a refresh never redirects, but the metadata must name one.
LOOPBACK_CALLBACK = "http://127.0.0.1/callback"


def oauth_client_metadata(spec: HttpServerSpec, redirect_uri: str = LOOPBACK_CALLBACK) -> OAuthClientMetadata:
    scopes = spec.oauth.scopes if spec.oauth is not None else ()
    return OAuthClientMetadata(
        client_name=f"mcp-bridge {__version__}",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=" ".join(scopes) or None,
    )


def _value(reference: str, field: str, environ: Mapping[str, str]) -> str:
    """The value an `${env:NAME}` reference names (the model checked its shape); never quoted back."""
    name = env_reference(reference) or ""  # OAuthClient admits nothing but references
    value = environ.get(name)
    if not value:
        raise BridgeError(
            "auth_required",
            f"The server's oauth.{field} names ${{env:{name}}}, which is not set in the bridge's environment: "
            "the operator must set it and restart the bridge.",
            variable=name,
        )
    return value


def secrets_of(spec: HttpServerSpec, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The operator's OAuth secrets for `spec` that are set: what an error message must never quote."""
    oauth = spec.oauth
    if oauth is None:
        return []
    references = [ref for ref in (oauth.client_secret, oauth.private_key) if ref is not None]
    return [value for ref in references if (value := environ.get(env_reference(ref) or ""))]


def static_client(
    oauth: OAuthClient | None, redirect_uri: str, environ: Mapping[str, str] = os.environ
) -> OAuthClientInformationFull | None:
    """The operator's pre-registered client, secret included (in memory only); None: register."""
    if oauth is None or oauth.client_id is None:
        return None
    secret = _value(oauth.client_secret, "client_secret", environ) if oauth.client_secret else None
    method = oauth.token_endpoint_auth_method or ("client_secret_basic" if secret else "none")
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=secret,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method=method,
        scope=" ".join(oauth.scopes) or None,
    )


def _client_credentials(
    spec: HttpServerSpec, oauth: OAuthClient, tokens: ServerTokens, environ: Mapping[str, str]
) -> httpx2.Auth:
    """The SDK's client-credentials provider: it asks for a token on the first 401, no user involved."""
    assert oauth.client_id is not None  # the model requires it for this grant
    scope = " ".join(oauth.scopes) or None
    with warnings.catch_warnings():
        # Without `issuer` the SDK warns (the server then decides where the credentials go); the
        # operator's docs say to set it, and the bridge's stderr is not where they would read that.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if oauth.private_key is not None:
            key = SignedJWTParameters(
                issuer=oauth.client_id,
                subject=oauth.client_id,
                signing_key=_value(oauth.private_key, "private_key", environ),
                signing_algorithm=oauth.signing_algorithm,
            )
            return PrivateKeyJWTOAuthProvider(
                spec.url, tokens, oauth.client_id, key.create_assertion_provider(), scope=scope, issuer=oauth.issuer
            )
        assert oauth.client_secret is not None
        post = oauth.token_endpoint_auth_method == "client_secret_post"
        method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_post" if post else "client_secret_basic"
        return ClientCredentialsOAuthProvider(
            spec.url,
            tokens,
            oauth.client_id,
            _value(oauth.client_secret, "client_secret", environ),
            token_endpoint_auth_method=method,
            scope=scope,
            issuer=oauth.issuer,
        )


def session_auth(spec: HttpServerSpec, tokens: ServerTokens, environ: Mapping[str, str] = os.environ) -> httpx2.Auth | None:
    """What signs a new session's requests in: the client-credentials grant, or the user's stored
    sign-in (refreshed when due); None before the user has signed in."""
    oauth = spec.oauth
    if oauth is not None and oauth.grant == "client_credentials":
        return _client_credentials(spec, oauth, tokens, environ)
    if not tokens.signed_in:
        return None
    return StoredOAuth(
        server_url=spec.url,
        client_metadata=oauth_client_metadata(spec),
        storage=tokens,
        client=static_client(oauth, LOOPBACK_CALLBACK, environ),
    )


def sign_in_auth(
    spec: HttpServerSpec,
    storage: SharedTokenStorage,
    redirect_uri: str,
    client: OAuthClientInformationFull | None,
    *,
    redirect_handler: Callable[[str], Awaitable[None]],
    callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
    step_up_scope: str | None = None,
) -> StoredOAuth:
    """The provider of one interactive sign-in (the authorization code flow with PKCE)."""
    return StoredOAuth(
        server_url=spec.url,
        client_metadata=oauth_client_metadata(spec, redirect_uri),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client=client,
        client_metadata_url=spec.oauth.client_metadata_url if spec.oauth is not None else None,
        step_up_scope=step_up_scope,
    )
