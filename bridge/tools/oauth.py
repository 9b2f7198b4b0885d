"""Who the bridge is when it signs in to a downstream server: its OAuth client metadata."""

from __future__ import annotations

from mcp.shared.auth import OAuthClientMetadata

from bridge import __version__
from bridge.models import HttpServerSpec

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
