"""Clients named by a metadata document URL (CIMD), ChatGPT's way of connecting."""

from __future__ import annotations

from oauth_support import (
    CHATGPT_REDIRECT,
    MemoryTokens,
    RawClient,
    echo_through,
    sdk_oauth,
)

from bridge.host.oauth import CHATGPT_REDIRECT_PATTERNS, list_clients


def chatgpt_document(url: str, redirect_uri: str = CHATGPT_REDIRECT) -> dict:
    return {
        "client_id": url,
        "client_name": "ChatGPT",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


async def test_a_chatgpt_like_client_connects_by_its_metadata_document(serve, owner, cimd_host, loopback_tls) -> None:
    url = cimd_host.origin + "/oauth/chatgpt.json"
    cimd_host.publish("/oauth/chatgpt.json", chatgpt_document(url))
    served = serve(cimd_loopback_ca=loopback_tls[0], allowed_redirect_uri_patterns=CHATGPT_REDIRECT_PATTERNS)
    storage = MemoryTokens()
    oauth = sdk_oauth(served, owner, storage, redirect_uri=CHATGPT_REDIRECT, client_metadata_url=url)

    tools = await echo_through(served, oauth, user_agent="openai-mcp/1.0.0")

    assert tools == ["echo"]
    assert storage.client_info is not None and storage.client_info.client_id == url
    (client,) = list_clients(served.state_dir)
    assert (client.kind, client.client_name, client.redirect_uris) == ("cimd", "ChatGPT", [CHATGPT_REDIRECT])


def test_a_production_bridge_does_not_fetch_documents_from_loopback(serve, cimd_host) -> None:
    url = cimd_host.publish("/oauth/chatgpt.json", {})
    cimd_host.documents["/oauth/chatgpt.json"] = chatgpt_document(url)
    served = serve()

    refused = RawClient(served, url, CHATGPT_REDIRECT).authorize()

    assert refused.status_code == 400 and "not found" in refused.json()["error_description"]
    assert list_clients(served.state_dir) == []


def test_a_document_naming_a_refused_redirect_uri_is_refused(serve, cimd_host, loopback_tls) -> None:
    url = cimd_host.origin + "/oauth/bad.json"
    cimd_host.publish("/oauth/bad.json", chatgpt_document(url, "http://evil.example/callback"))
    served = serve(cimd_loopback_ca=loopback_tls[0])

    refused = RawClient(served, url, "http://evil.example/callback").authorize()

    assert refused.status_code == 400
    assert list_clients(served.state_dir) == []


def test_a_document_whose_client_id_is_another_url_is_refused(serve, cimd_host, loopback_tls) -> None:
    url = cimd_host.publish("/oauth/liar.json", chatgpt_document("https://chatgpt.com/oauth/client.json"))
    served = serve(cimd_loopback_ca=loopback_tls[0])

    refused = RawClient(served, url, CHATGPT_REDIRECT).authorize()

    assert refused.status_code == 400
