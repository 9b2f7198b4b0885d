"""A dynamic server that shadows a config HTTP server neither overwrites nor, removed, forgets the
developer's sign-in; removing a dynamic server forgets its own.

Real OAuth-protected servers on 127.0.0.1 (`tests/servers/oauth_protected.py`, FastMCP with an
in-memory authorization server that approves at once); the test plays the user's browser.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from bridge_support import BridgeDirs, MakeBridge
from helpers import start_http_fixture
from mcp.shared.auth import OAuthToken

from bridge.store.tokens import ServerTokens
from bridge.tools import Bridge, Reply


@pytest.fixture
def developers() -> Iterator[str]:
    with start_http_fixture("oauth_protected.py") as (base, _):
        yield f"{base}/mcp"


@pytest.fixture
def shadows() -> Iterator[str]:
    with start_http_fixture("oauth_protected.py") as (base, _):
        yield f"{base}/mcp"


def whoami(bridge: Bridge) -> Reply:
    return bridge.call_tool("remote", "whoami", "{}")


def signed_in(bridge: Bridge) -> Reply:
    """Sign `remote` in as the user would: the model gets the URL, the browser opens it."""
    first = whoami(bridge)
    assert first.data.code == "auth_required", first.text  # type: ignore[union-attr]
    approved = httpx.get(first.data.detail["url"], follow_redirects=False, timeout=30)  # type: ignore[union-attr]
    assert approved.status_code == 302, approved.text
    httpx.get(approved.headers["location"], timeout=30)  # the browser lands on the bridge's loopback callback
    for _ in range(100):  # the background flow stores the tokens once the browser is back
        after = whoami(bridge)
        if not after.is_error:
            return after
    raise AssertionError(after.text)


def kept_urls(dirs: BridgeDirs) -> set[str]:
    path: Path = dirs.state / "oauth" / "servers" / "remote.json"
    return set(json.loads(path.read_text())["by_url"]) if path.exists() else set()


def config(url: str) -> dict[str, dict[str, Any]]:
    return {"remote": {"transport": "http", "url": url}}


def test_removing_a_dynamic_server_forgets_its_own_sign_in(make_bridge: MakeBridge, bridge_dirs: BridgeDirs, shadows: str) -> None:
    bridge = make_bridge(session_idle_s=0)
    assert not bridge.add_server("remote", url=shadows).is_error
    signed_in(bridge)
    assert kept_urls(bridge_dirs) == {shadows}
    assert not bridge.remove_server("remote").is_error
    assert kept_urls(bridge_dirs) == set()


def test_removing_a_shadow_keeps_the_developers_sign_in(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, developers: str, shadows: str
) -> None:
    bridge = make_bridge(config(developers), session_idle_s=0)
    who = signed_in(bridge).text
    assert not bridge.add_server("remote", url=shadows).is_error  # the model shadows the config entry
    signed_in(bridge)  # and signs the shadow in: the developer's sign-in is not overwritten
    assert kept_urls(bridge_dirs) == {developers, shadows}
    assert not bridge.remove_server("remote").is_error
    assert kept_urls(bridge_dirs) == {developers}
    again = whoami(bridge)
    assert not again.is_error and again.text == who, again.text  # the developer's own client, no new sign-in


def test_removing_a_shadow_at_the_developers_own_url_keeps_the_sign_in(
    make_bridge: MakeBridge, bridge_dirs: BridgeDirs, developers: str
) -> None:
    bridge = make_bridge(config(developers), session_idle_s=0)
    who = signed_in(bridge).text
    assert not bridge.add_server("remote", url=developers, headers_json='{"X-Shadow": "1"}').is_error
    assert not bridge.remove_server("remote").is_error
    assert kept_urls(bridge_dirs) == {developers}
    assert whoami(bridge).text == who


async def test_a_sign_in_kept_in_the_first_files_shape_is_still_read_and_kept(tmp_path: Path) -> None:
    legacy = {"url": "https://a.example/mcp", "tokens": {"access_token": "at-1", "token_type": "Bearer"}}
    (tmp_path / "remote.json").write_text(json.dumps(legacy))
    developers, shadows = ServerTokens(tmp_path, "remote", legacy["url"]), ServerTokens(tmp_path, "remote", "https://b.example/mcp")
    assert developers.signed_in and not shadows.signed_in
    await shadows.set_tokens(OAuthToken(access_token="at-2", token_type="Bearer"))
    assert shadows.forget()
    assert (await developers.get_tokens()) == OAuthToken(access_token="at-1", token_type="Bearer")
