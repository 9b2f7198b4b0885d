"""The redirect URI policy as a pure function: https anywhere, plain http only to loopback."""

from __future__ import annotations

import pytest

from bridge.host.oauth import (
    CHATGPT_REDIRECT_PATTERNS,
    OAuthSettings,
    build_oauth_provider,
)
from bridge.host.oauth.redirects import redirect_uri_problem


@pytest.mark.parametrize(
    "uri",
    [
        "https://chatgpt.com/connector_platform_oauth_redirect",
        "https://chatgpt.com/connector/oauth/Zk3_9a",
        "http://127.0.0.1:33418/callback",
        "http://localhost/callback",
        "http://[::1]:8080/cb",
    ],
)
def test_allowed_redirect_uris(uri: str) -> None:
    assert redirect_uri_problem(uri, None) is None


@pytest.mark.parametrize(
    "uri",
    [
        "http://chatgpt.com/connector_platform_oauth_redirect",
        "http://localhost.evil.example/cb",
        "myapp://callback",
        "javascript:alert(1)",
        "https://user@chatgpt.com/cb",
        "https://chatgpt.com/cb#frag",
        "http://localhost:*/callback",
    ],
)
def test_refused_redirect_uris(uri: str) -> None:
    assert redirect_uri_problem(uri, None) is not None


def test_chatgpt_patterns_allow_its_connector_uris_only() -> None:
    assert redirect_uri_problem("https://chatgpt.com/connector/oauth/abc", CHATGPT_REDIRECT_PATTERNS) is None
    platform = "https://chatgpt.com/connector_platform_oauth_redirect"
    assert redirect_uri_problem(platform, CHATGPT_REDIRECT_PATTERNS) is None
    assert redirect_uri_problem("https://evil.example/connector/oauth/abc", CHATGPT_REDIRECT_PATTERNS) is not None
    assert redirect_uri_problem("http://127.0.0.1:9/callback", CHATGPT_REDIRECT_PATTERNS) is not None


def test_a_plain_http_base_url_to_a_public_host_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="HTTPS"):
        build_oauth_provider(OAuthSettings(state_dir=tmp_path, base_url="http://bridge.example"))
    assert build_oauth_provider(OAuthSettings(state_dir=tmp_path, base_url="https://bridge.example"))
