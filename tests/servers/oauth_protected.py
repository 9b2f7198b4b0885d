"""A real OAuth-protected MCP server on 127.0.0.1: FastMCP with its in-memory authorization server
(which approves every authorization at once, standing in for the user's sign-in page).

    oauth_protected.py --http      serve Streamable HTTP at /mcp; announce 'PORT <n>' on stdout

Env: TOKEN_TTL_S (access token lifetime, default 3600); CLIENT=id:secret, a confidential client set
up out of band (client_secret_basic, any loopback redirect), and no dynamic registration. Tools: whoami (the client id of the token
the call carried), echo. The test revokes tokens through the server's own /revoke endpoint.
"""

from __future__ import annotations

import os
import socket
import time

import uvicorn
from fastmcp import FastMCP
from fastmcp.server.auth import AccessToken
from fastmcp.server.auth.providers import in_memory
from fastmcp.server.auth.providers.in_memory import InMemoryOAuthProvider
from fastmcp.server.dependencies import get_access_token
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

in_memory.DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS = int(os.environ.get("TOKEN_TTL_S", "3600"))


class Provider(InMemoryOAuthProvider):
    """As real servers do, an expired access token leaves its refresh token usable (FastMCP's
    in-memory provider revokes both when the expired one is presented)."""

    async def load_access_token(self, token: str) -> AccessToken | None:  # type: ignore[override]
        found = self.access_tokens.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found


class LoopbackClient(OAuthClientInformationFull):
    """A native app's client: any port of the loopback callback is its redirect (RFC 8252 §7.3)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None or redirect_uri.host != "127.0.0.1" or redirect_uri.path != "/callback":
            return super().validate_redirect_uri(redirect_uri)
        return redirect_uri


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    preregistered = os.environ.get("CLIENT")
    auth = Provider(
        base_url=f"http://127.0.0.1:{port}",
        client_registration_options=ClientRegistrationOptions(enabled=not preregistered),
        revocation_options=RevocationOptions(enabled=True),
    )
    if preregistered:
        client_id, secret = preregistered.split(":", 1)
        auth.clients[client_id] = LoopbackClient(
            client_id=client_id,
            client_secret=secret,
            redirect_uris=["http://127.0.0.1/callback"],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_basic",
            grant_types=["authorization_code", "refresh_token"],
        )
    mcp = FastMCP("oauth-protected", auth=auth)

    @mcp.tool(description="The client id of the access token this call carried.")
    def whoami() -> str:
        token = get_access_token()
        return token.client_id if token is not None else "anonymous"

    @mcp.tool(description="Return the text.")
    def echo(text: str) -> str:
        return text

    print(f"PORT {port}", flush=True)
    uvicorn.Server(uvicorn.Config(mcp.http_app(path="/mcp"), log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
