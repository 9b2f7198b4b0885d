"""Clients that name themselves by a URL: the client ID metadata document (CIMD) behind it.

FastMCP's `CIMDFetcher` does the fetching in production: HTTPS only, DNS pinned, private and
loopback addresses refused, 5 KB at most, no redirects, HTTP caching. Tests cannot reach a public
host, so `OAuthSettings.cimd_loopback_ca` adds a loopback-only fetcher trusting one test CA; it
never widens what a production bridge will dial.

A document becomes a public client (`token_endpoint_auth_method: none`): this server keeps no
client keys, so `private_key_jwt` documents are refused, as are redirect URIs the bridge's policy
refuses (`redirects.py`).
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from fastmcp.server.auth.cimd import (
    CIMDDocument,
    CIMDFetcher,
    CIMDFetchError,
    CIMDValidationError,
)
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from bridge.host.oauth.redirects import redirect_uris_problem
from bridge.host.oauth.settings import OAuthSettings

logger = logging.getLogger("mcp_bridge.oauth")

DEFAULT_SCOPE = "offline_access"


class LoopbackCIMDFetcher:
    """Tests only: fetch a CIMD document from an HTTPS server on 127.0.0.1 or ::1."""

    def __init__(self, ca_file: Path) -> None:
        self._tls = ssl.create_default_context(cafile=str(ca_file))

    @staticmethod
    def handles(url: str) -> bool:
        parts = urlsplit(url)
        try:
            return parts.scheme == "https" and ipaddress.ip_address(parts.hostname or "").is_loopback
        except ValueError:
            return False

    async def fetch(self, url: str) -> CIMDDocument:
        async with httpx.AsyncClient(verify=self._tls, follow_redirects=False, timeout=5.0, trust_env=False) as http:
            try:
                response = await http.get(url)
            except httpx.HTTPError as exc:
                raise CIMDFetchError(f"cannot fetch {url}: {exc}") from None
        if response.status_code != 200:
            raise CIMDFetchError(f"HTTP {response.status_code} fetching {url}")
        if len(response.content) > CIMDFetcher.MAX_RESPONSE_SIZE:
            raise CIMDValidationError(f"{url} is larger than {CIMDFetcher.MAX_RESPONSE_SIZE} bytes")
        try:
            doc = CIMDDocument.model_validate_json(response.content)
        except ValidationError as exc:
            raise CIMDValidationError(f"invalid CIMD document at {url}: {exc}") from None
        if str(doc.client_id).rstrip("/") != url.rstrip("/"):
            raise CIMDValidationError(f"CIMD client_id {doc.client_id} is not the URL it was fetched from")
        return doc


class CIMDClients:
    """Turns a CIMD client ID into the client it describes."""

    def __init__(self, settings: OAuthSettings) -> None:
        self._patterns = settings.allowed_redirect_uri_patterns
        self._public = CIMDFetcher()
        self._loopback = LoopbackCIMDFetcher(settings.cimd_loopback_ca) if settings.cimd_loopback_ca else None

    def names_document(self, client_id: str) -> bool:
        """Whether `client_id` is an HTTPS URL with a path, the shape of a CIMD client ID."""
        return self._public.is_cimd_client_id(client_id)

    async def resolve(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client the document describes, or None when the document is refused.

        Raises `CIMDFetchError` when the document cannot be reached, so a caller may fall back on
        what it fetched before.
        """
        fetcher = self._loopback if self._loopback and self._loopback.handles(client_id) else self._public
        try:
            doc = await fetcher.fetch(client_id)
        except CIMDValidationError as exc:
            logger.warning("OAuth: CIMD document %s refused: %s", client_id, exc)
            return None
        problem = redirect_uris_problem(doc.redirect_uris, self._patterns)
        if doc.token_endpoint_auth_method != "none":
            problem = f"token_endpoint_auth_method {doc.token_endpoint_auth_method!r} is not supported"
        if problem:
            logger.warning("OAuth: CIMD document %s refused: %s", client_id, problem)
            return None
        return OAuthClientInformationFull(
            client_id=client_id,
            client_name=doc.client_name,
            client_uri=doc.client_uri,
            redirect_uris=doc.redirect_uris,
            grant_types=doc.grant_types,
            response_types=doc.response_types,
            scope=doc.scope or DEFAULT_SCOPE,
            token_endpoint_auth_method="none",
        )
