"""The bridge's own OAuth 2.1 authorization server, for one owner (ChatGPT through a tunnel).

- `build_oauth_provider(OAuthSettings)` -> the FastMCP `AuthProvider` to pass as `FastMCP(auth=...)`.
- `list_pending`, `list_clients`, `revoke_client` -> what `mcp-bridge auth pending|clients|revoke`
  shows and does, from any process sharing the state directory.

Modules: `settings` (typed settings), `provider` (the FastMCP provider), `consent` and
`consent_page` (the pairing-code step), `cimd` (clients named by a metadata document URL),
`redirects` (redirect URI policy), `state` and `store` (the 0600 state file), `admin` (CLI side).
"""

from bridge.host.oauth.admin import (
    ClientView,
    PendingView,
    list_clients,
    list_pending,
    revoke_client,
)
from bridge.host.oauth.provider import BridgeOAuthProvider, build_oauth_provider
from bridge.host.oauth.redirects import CHATGPT_REDIRECT_PATTERNS
from bridge.host.oauth.settings import OAuthSettings

__all__ = [
    "CHATGPT_REDIRECT_PATTERNS",
    "BridgeOAuthProvider",
    "ClientView",
    "OAuthSettings",
    "PendingView",
    "build_oauth_provider",
    "list_clients",
    "list_pending",
    "revoke_client",
]
