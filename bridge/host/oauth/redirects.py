"""Which redirect URIs a client may register: https anywhere, plain http only back to this machine.

A registered URI is later matched exactly (the SDK compares parsed URLs), so this is the only place
that decides what a client may name. Custom schemes are refused: the bridge's clients are web
connectors (ChatGPT) and local tools listening on loopback.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from fastmcp.server.auth.redirect_validation import (
    is_loopback_host,
    matches_allowed_pattern,
)

# What ChatGPT's connectors have been seen to register; a ready allowlist for
# `OAuthSettings.allowed_redirect_uri_patterns`.
CHATGPT_REDIRECT_PATTERNS: tuple[str, ...] = (
    "https://chatgpt.com/connector_platform_oauth_redirect",
    "https://chatgpt.com/connector/oauth/*",
)


def redirect_uri_problem(uri: str, allowed_patterns: Sequence[str] | None) -> str | None:
    """Why `uri` may not be registered, or None when it may."""
    try:
        parts = urlsplit(uri)
        parts.port  # a wildcard or junk port raises here; only exact URIs are registered
    except ValueError:
        return f"redirect URI {uri!r} is not an exact URL"
    if parts.fragment:
        return f"redirect URI {uri!r} has a fragment"
    if parts.username is not None or parts.password is not None or "\\" in parts.netloc:
        return f"redirect URI {uri!r} carries user information"
    if parts.scheme == "http":
        if not is_loopback_host(parts.hostname):
            return f"redirect URI {uri!r} is plain http to a host other than loopback"
    elif parts.scheme != "https" or not parts.hostname:
        return f"redirect URI {uri!r} is neither https nor http on loopback"
    if allowed_patterns is not None and not any(matches_allowed_pattern(uri, p) for p in allowed_patterns):
        return f"redirect URI {uri!r} matches none of the allowed patterns"
    return None


def redirect_uris_problem(uris: Iterable[str], allowed_patterns: Sequence[str] | None) -> str | None:
    """The first problem among `uris`, or None when every one may be registered."""
    listed = list(uris)
    if not listed:
        return "no redirect URI given"
    return next((p for p in (redirect_uri_problem(u, allowed_patterns) for u in listed) if p), None)
