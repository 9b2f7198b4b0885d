"""Discovery: the metadata documents at the paths the spec and the clients look at."""

from __future__ import annotations

import httpx
import pytest


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"])
def test_protected_resource_metadata_names_the_mcp_url_and_this_issuer(serve, path: str) -> None:
    served = serve()

    doc = httpx.get(served.base_url + path, trust_env=False).json()

    assert doc["resource"] == served.mcp_url
    # FastMCP renders the issuer as a parsed URL, with a trailing slash, in both documents alike.
    assert doc["authorization_servers"] == [served.base_url + "/"]
    assert doc["scopes_supported"] == ["offline_access"]


@pytest.mark.parametrize("path", ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"])
def test_authorization_server_metadata_says_public_clients_s256_and_cimd(serve, path: str) -> None:
    served = serve()

    doc = httpx.get(served.base_url + path, trust_env=False).json()

    assert doc["issuer"] == served.base_url + "/"
    assert doc["authorization_endpoint"] == served.base_url + "/authorize"
    assert doc["token_endpoint"] == served.base_url + "/token"
    assert doc["registration_endpoint"] == served.base_url + "/register"
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["token_endpoint_auth_methods_supported"] == ["none"]
    assert doc["client_id_metadata_document_supported"] is True
    assert set(doc["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert "offline_access" in doc["scopes_supported"]
