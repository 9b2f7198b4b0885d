"""How the HTTP face authenticates, chosen once at start from the settings, and said truthfully.

`MCP_AUTH` picks the method; `auto` (the default) takes the bearer token when `MCP_AUTH_TOKEN` is
set, the built-in OAuth server as soon as the bridge is reachable from elsewhere (a non-loopback
`MCP_ALLOWED_HOSTS` name, `MCP_PUBLIC_URL`, a non-loopback bind), and none otherwise. A launcher
may bring a FastMCP provider instead (`bridge.host.main.main(auth=...)`), only with
`MCP_AUTH_ALLOWED_USERS`. Whatever is chosen, a bridge reachable from elsewhere never starts
without authentication: `AuthRefused` says what to set.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

from fastmcp.server.auth import AccessToken, AuthProvider, TokenVerifier
from starlette.middleware import Middleware

from bridge.host.addresses import is_loopback
from bridge.host.guards import AllowedAccounts, LoopbackOnly
from bridge.host.oauth import OAuthSettings, build_oauth_provider
from bridge.settings import Settings


class BearerToken(TokenVerifier):
    """One static bearer token, compared in constant time (FastMCP's StaticTokenVerifier looks
    tokens up in a dict)."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self._expected = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._expected):
            return AccessToken(token=token, client_id="host", scopes=[])
        return None


class AuthRefused(Exception):
    """The settings would serve a reachable bridge without authentication, or contradict each other."""


@dataclass(frozen=True)
class FaceAuth:
    """The chosen method: the provider FastMCP enforces, the guards around it, what the log says."""

    provider: AuthProvider | None
    method: str
    without_credentials: str
    public_url: str | None = None
    middleware: list[Middleware] = field(default_factory=list)


def _exposed_by(settings: Settings, bind_host: str) -> str | None:
    """What makes the bridge reachable from other machines, or None when only loopback can reach it."""
    if settings.public_url is not None:
        return f"MCP_PUBLIC_URL is {settings.public_url}"
    names = [name for name in settings.allowed_hosts if not is_loopback(name)]
    if names:
        return f"MCP_ALLOWED_HOSTS names {', '.join(names)}"
    if not is_loopback(bind_host):
        return f"it listens on {bind_host}"
    return None


def _issuer(settings: Settings, bind_host: str, port: int) -> str:
    """The OAuth issuer: MCP_PUBLIC_URL, else https and the tunnel's name, else the bound loopback origin."""
    if settings.public_url is not None:
        return str(settings.public_url).rstrip("/")
    names = [name for name in settings.allowed_hosts if not is_loopback(name)]
    if names:
        if any(c in names[0] for c in "*?[]"):
            raise AuthRefused(
                f"MCP_ALLOWED_HOSTS starts with the pattern {names[0]}, which cannot be the OAuth issuer; "
                "set MCP_PUBLIC_URL=https://<your tunnel's host name>."
            )
        return f"https://{names[0]}"
    if not is_loopback(bind_host):
        raise AuthRefused(
            f"refusing to serve on {bind_host} without authentication: set MCP_AUTH_TOKEN, or "
            "MCP_PUBLIC_URL=https://<the host clients reach> for the built-in OAuth server "
            "(or bind to 127.0.0.1 and use a tunnel)."
        )
    host = f"[{bind_host}]" if ":" in bind_host else bind_host
    return f"http://{host}:{port}"


OAUTH_OPEN = (
    "only the OAuth endpoints (discovery, registration, authorization, the consent page); every /mcp "
    "request needs a token"
)


def choose_auth(settings: Settings, bind_host: str, port: int, launcher: AuthProvider | None = None) -> FaceAuth:
    """The face's authentication (see the module docstring); `AuthRefused` names what to set."""
    exposed = _exposed_by(settings, bind_host)
    mode = settings.auth
    if launcher is not None:
        if mode != "auto" or settings.auth_token is not None:
            raise AuthRefused(
                "a launcher's auth provider and MCP_AUTH or MCP_AUTH_TOKEN are both set; choose one "
                "(unset them, or drop the provider)."
            )
        if not settings.auth_allowed_users:
            raise AuthRefused(
                f"{type(launcher).__name__} admits any account of its provider; set MCP_AUTH_ALLOWED_USERS to "
                "the accounts to let in (login or email, comma-separated)."
            )
        users = ", ".join(settings.auth_allowed_users)
        return FaceAuth(
            launcher,
            f"{type(launcher).__name__} (launcher), accounts {users}",
            OAUTH_OPEN.replace("OAuth endpoints", "provider's sign-in endpoints"),
            middleware=[Middleware(AllowedAccounts, allowed=settings.auth_allowed_users)],
        )
    if mode == "auto":
        mode = "token" if settings.auth_token is not None else "oauth" if exposed else "none"
    if mode == "token":
        if settings.auth_token is None:
            raise AuthRefused("MCP_AUTH=token needs MCP_AUTH_TOKEN (at least 16 characters).")
        return FaceAuth(BearerToken(settings.auth_token.get_secret_value()), "bearer token (MCP_AUTH_TOKEN)", "none")
    if settings.auth_token is not None:
        raise AuthRefused(f"MCP_AUTH={mode} and MCP_AUTH_TOKEN are both set; choose one.")
    if mode == "none":
        if exposed:
            raise AuthRefused(
                f"refusing to serve without authentication: {exposed}, so other machines can reach it. "
                "Unset MCP_AUTH (the built-in OAuth server is the default then) or set MCP_AUTH_TOKEN."
            )
        return FaceAuth(
            None,
            "none",
            "requests whose Host is a loopback name and that carry no forwarding headers (this machine only)",
            middleware=[Middleware(LoopbackOnly)],
        )
    issuer = _issuer(settings, bind_host, port)
    oauth = OAuthSettings(state_dir=settings.state_dir, base_url=issuer, cimd_loopback_ca=settings.oauth_test_cimd_ca)
    try:
        provider = build_oauth_provider(oauth)
    except ValueError:
        raise AuthRefused(f"the OAuth issuer {issuer} must be https (or loopback); fix MCP_PUBLIC_URL.") from None
    method = f"built-in OAuth server, issuer {issuer} (approve a client with the pairing code logged here)"
    return FaceAuth(provider, method, OAUTH_OPEN, public_url=issuer)
