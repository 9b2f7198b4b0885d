"""ASGI guards of the HTTP face, each for one promise the start log makes.

- `LoopbackOnly` (no authentication configured): a request is served only when its `Host` is a
  loopback name and it carries no forwarding header. A tunnel that rewrites `Host` to localhost
  (`cloudflared --http-host-header`, `ngrok --host-header=rewrite`) still adds `X-Forwarded-For`,
  `Cf-Connecting-Ip` and the like, and is refused: without credentials only this machine is served.
- `AllowedAccounts` (a launcher's OAuth proxy): FastMCP's GitHub, Google... proxies admit any
  account of that provider; only the accounts the operator lists (`MCP_AUTH_ALLOWED_USERS`) pass,
  matched against the claims the provider's verifier put in the access token.

Both answer a refusal themselves with a short plain-text 403 that says what to set.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from bridge.host.addresses import is_loopback_host

FORWARDING_HEADERS = frozenset(
    {
        "forwarded", "via", "x-real-ip", "true-client-ip", "x-client-ip", "x-cluster-client-ip",
        "cf-connecting-ip", "cf-connecting-ipv6", "cf-ray", "cf-visitor", "cdn-loop", "fastly-client-ip",
        "x-original-forwarded-for", "tailscale-funnel-request", "ngrok-trace-id",
    }
)
FORWARDING_PREFIXES = ("x-forwarded-",)
# Claims FastMCP's providers fill with the account's name, in the order they are tried.
ACCOUNT_CLAIMS = ("login", "preferred_username", "username", "email", "upn", "sub")


def forwarded(headers: Headers) -> str | None:
    """The first forwarding header a request carries (a proxy or tunnel sent it on), else None."""
    for name in headers.keys():
        if name in FORWARDING_HEADERS or name.startswith(FORWARDING_PREFIXES):
            return name
    return None


class LoopbackOnly:
    """Serve only this machine's own clients: loopback `Host`, no forwarding headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            via = forwarded(headers)
            if via is not None or not is_loopback_host(headers.get("host", "")):
                why = f"it came through a proxy ({via})" if via else "its Host is not a loopback name"
                message = (
                    f"Refused: this bridge has no authentication, so it serves this machine only and {why}. "
                    "Set MCP_AUTH=oauth (or MCP_AUTH_TOKEN) to serve through a tunnel.\n"
                )
                await PlainTextResponse(message, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def account_names(claims: dict[str, object]) -> set[str]:
    """The names an access token's claims give its account, case-folded; an email only when not
    marked unverified."""
    names = set()
    for claim in ACCOUNT_CLAIMS:
        value = claims.get(claim)
        if not isinstance(value, str | int) or (claim == "email" and claims.get("email_verified") is False):
            continue
        names.add(str(value).casefold())
    return names


class AllowedAccounts:
    """Let through only authenticated requests whose account the operator listed."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = {name.casefold() for name in allowed}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if scope["type"] == "http" and isinstance(user, AuthenticatedUser):
            token = user.access_token
            claims = dict(getattr(token, "claims", None) or {})
            if not account_names(claims) & self.allowed:
                message = "Refused: this account is not in the bridge's MCP_AUTH_ALLOWED_USERS.\n"
                await PlainTextResponse(message, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)
