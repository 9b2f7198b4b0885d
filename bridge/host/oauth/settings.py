"""`OAuthSettings`: every value the bridge's authorization server needs, typed, with its default.

The lead's Settings builds this from the environment; nothing in this package reads the
environment itself.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field


class OAuthSettings(BaseModel):
    """The authorization server of one owner: where it keeps its state and how long things last."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    state_dir: Path = Field(description="The bridge's state directory; the server keeps `oauth/` under it.")
    base_url: AnyHttpUrl = Field(
        description="The public origin clients reach, e.g. https://<tunnel host>; it is the issuer, and "
        "the resource is this URL plus the MCP path."
    )
    allowed_redirect_uri_patterns: tuple[str, ...] | None = Field(
        default=None,
        description="When set, a client may register only redirect URIs matching one of these "
        "(FastMCP wildcard syntax, e.g. CHATGPT_REDIRECT_PATTERNS); None allows any https URI and "
        "http on loopback hosts.",
    )
    pairing_code_ttl_s: float = Field(default=300, gt=0, le=3600)
    pairing_code_attempts: int = Field(default=5, ge=1, le=20)
    max_pending_requests: int = Field(
        default=16, ge=1, le=256, description="Consent requests waiting at once; a new one past it ends the "
        "oldest of the source holding the most (`limits.py`), so nobody can flood the owner's log, guess codes "
        "across many requests, or keep the owner's own request from being filed."
    )
    authorization_code_ttl_s: float = Field(default=300, gt=0, le=600)
    access_token_ttl_s: int = Field(default=3600, ge=60, le=86400)
    refresh_token_ttl_s: int = Field(
        default=30 * 86400, ge=3600, le=365 * 86400, description="Idle lifetime: each rotation starts it again."
    )
    cimd_loopback_ca: Path | None = Field(
        default=None,
        description="Tests only: CIMD documents may then be fetched from a 127.0.0.1/::1 HTTPS server whose "
        "certificate this CA file signs. None (production) leaves CIMD to FastMCP's SSRF-guarded "
        "fetcher, which refuses private and loopback targets.",
    )
