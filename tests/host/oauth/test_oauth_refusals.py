"""What the server refuses, each beside the same request when it is allowed."""

from __future__ import annotations

import httpx
from oauth_support import LOOPBACK_REDIRECT, RawClient, redirect_params, register

from bridge.host.oauth import CHATGPT_REDIRECT_PATTERNS, list_pending


def test_pkce_plain_is_refused_before_any_consent(serve) -> None:
    served = serve()
    client = RawClient.registered(served)

    refused = client.authorize(code_challenge_method="plain", code_challenge=client.verifier)
    allowed = client.authorize()

    assert redirect_params(refused)["error"] == "invalid_request"
    assert allowed.status_code == 302 and "/oauth/consent?request=" in allowed.headers["location"]
    assert len(list_pending(served.state_dir)) == 1


def test_a_resource_other_than_this_bridge_is_refused_at_authorize(serve) -> None:
    served = serve()
    client = RawClient.registered(served)

    refused = redirect_params(client.authorize(resource="https://other.example/mcp"))
    allowed = client.authorize(resource=served.mcp_url + "/")

    assert refused["error"] == "invalid_target" and refused["state"] == "st-1"
    assert allowed.status_code == 302 and "/oauth/consent" in allowed.headers["location"]


def test_a_resource_other_than_this_bridge_is_refused_at_token(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    tokens = client.tokens_by_consent(served.state_dir)

    refused = client.refresh(tokens["refresh_token"], resource="https://other.example/mcp")
    allowed = client.refresh(tokens["refresh_token"])

    assert refused.status_code == 400 and refused.json()["error"] == "invalid_target"
    assert allowed.status_code == 200


def test_an_unregistered_redirect_uri_is_refused_without_redirecting(serve) -> None:
    served = serve()
    client = RawClient.registered(served)

    refused = client.authorize(redirect_uri="http://127.0.0.1:9/other")
    near_miss = client.authorize(redirect_uri=LOOPBACK_REDIRECT + "/")

    for response in (refused, near_miss):
        assert response.status_code == 400 and response.json()["error"] == "invalid_request"
    assert list_pending(served.state_dir) == []


def test_registration_refuses_plain_http_to_a_public_host(serve) -> None:
    served = serve()

    refused = register(served, redirect_uris=["http://example.com/callback"])
    custom_scheme = register(served, redirect_uris=["myapp://callback"])
    loopback = register(served, redirect_uris=["http://localhost:33418/callback"])
    https = register(served, redirect_uris=["https://app.example/callback"])

    for response in (refused, custom_scheme):
        assert response.status_code == 400 and response.json()["error"] == "invalid_redirect_uri"
    assert loopback.status_code == 201 and https.status_code == 201


def test_registration_honours_the_allowed_patterns(serve) -> None:
    served = serve(allowed_redirect_uri_patterns=CHATGPT_REDIRECT_PATTERNS)

    refused = register(served, redirect_uris=["https://app.example/callback"])
    connector = register(served, redirect_uris=["https://chatgpt.com/connector/oauth/abc123"])
    platform = register(served, redirect_uris=["https://chatgpt.com/connector_platform_oauth_redirect"])

    assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri"
    assert connector.status_code == 201 and platform.status_code == 201


def test_a_client_asking_for_a_secret_is_registered_as_public(serve) -> None:
    served = serve()

    response = register(served, token_endpoint_auth_method="client_secret_post")

    assert response.status_code == 201
    info = response.json()
    assert info["token_endpoint_auth_method"] == "none" and "client_secret" not in info
    client = RawClient(served, info["client_id"])
    assert client.tokens_by_consent(served.state_dir)["access_token"]


def test_a_token_from_nowhere_is_401(serve) -> None:
    served = serve()

    response = httpx.post(served.mcp_url, headers={"Authorization": "Bearer mcpb_at_forged",
                                                    "Accept": "application/json, text/event-stream"},
                          json={}, trust_env=False)

    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
