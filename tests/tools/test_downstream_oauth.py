"""Operator-set OAuth clients and what a failed sign-in says, against real servers on 127.0.0.1:
a FastMCP server whose authorization server knows one confidential client set up out of band (no
dynamic registration), and a plain HTTP server that answers 401 with no OAuth metadata anywhere.
The test plays the user's browser. The conformance suite (`tests/host/test_conformance.py`) covers
the rest of the spec's cases."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import httpx
import pytest
from mcp.shared.auth import AuthorizationCodeResult
from helpers import start_http_fixture

from bridge.errors import ErrorResult
from bridge.settings import Settings
from bridge.store.registry import parse_config_servers
from bridge.tools import Bridge, Reply
from bridge.tools.signin import LoopbackCallback

CLIENT_ID = "bridge-at-remote"
SECRET = "s3cr3t-4f9a1c7e2b8d6053"


@pytest.fixture
def confidential_server() -> Iterator[str]:
    with start_http_fixture("oauth_protected.py", env={"CLIENT": f"{CLIENT_ID}:{SECRET}"}) as (base, _):
        yield f"{base}/mcp"


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("MCP_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("MCP_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MCP_TIMEOUT", "30")
    return tmp_path / "state"


def make_bridge(url: str, **oauth: object) -> Bridge:
    return Bridge(Settings(session_idle_s=0), {"remote": {"transport": "http", "url": url, "oauth": oauth}})


def error(reply: Reply, code: str) -> ErrorResult:
    assert isinstance(reply.data, ErrorResult) and reply.data.code == code, reply.text
    return reply.data


def sign_in_through_the_browser(bridge: Bridge) -> Reply:
    """What the user does with `auth_required`: open its URL (the server approves at once and sends
    the browser to the bridge's loopback callback), then the model calls again."""
    url = error(bridge.call_tool("remote", "echo", '{"text": "hi"}'), "auth_required").detail["url"]
    httpx.get(url, follow_redirects=True, timeout=30)
    return bridge.call_tool("remote", "echo", '{"text": "signed in"}')


def test_a_secret_in_the_config_must_be_a_reference_and_is_never_quoted() -> None:
    entry = {"transport": "http", "url": "https://example.com/mcp", "oauth": {"client_id": "a", "client_secret": SECRET}}
    with pytest.raises(ValueError, match=r"client_secret.*\$\{env:NAME\}") as refused:
        parse_config_servers({"remote": entry})
    assert SECRET[:8] not in str(refused.value)


def test_a_pre_registered_confidential_client_signs_in_and_its_secret_is_kept_nowhere(
    confidential_server: str, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMOTE_SECRET", SECRET)
    bridge = make_bridge(confidential_server, client_id=CLIENT_ID, client_secret="${env:REMOTE_SECRET}")
    try:
        after = sign_in_through_the_browser(bridge)
        assert after.text == "signed in", after.text
        assert bridge.call_tool("remote", "whoami", "{}").text == CLIENT_ID
    finally:
        bridge.close()
    written = [path.read_bytes() for path in state.rglob("*") if path.is_file()]
    assert any(b'"access_token"' in data for data in written)  # the token file, with the sign-in
    assert not [data for data in written if SECRET[:8].encode() in data]  # token file, registry, audit, index


def test_a_refused_client_says_invalid_client_and_what_to_set(
    confidential_server: str, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "wrong-secret-7c1e9a3b5d"
    monkeypatch.setenv("REMOTE_SECRET", wrong)
    bridge = make_bridge(confidential_server, client_id=CLIENT_ID, client_secret="${env:REMOTE_SECRET}")
    try:
        refused = error(sign_in_through_the_browser(bridge), "auth_required")
    finally:
        bridge.close()
    assert "invalid_client" in refused.message and "client_secret" in refused.message, refused.message
    assert wrong[:8] not in json.dumps(refused.model_dump())


def test_a_secret_reference_that_is_not_set_is_said_before_anything_is_sent(confidential_server: str, state: Path) -> None:
    bridge = make_bridge(confidential_server, client_id=CLIENT_ID, client_secret="${env:REMOTE_SECRET_UNSET}")
    try:
        data = error(bridge.call_tool("remote", "echo", '{"text": "hi"}'), "auth_required")
    finally:
        bridge.close()
    assert "REMOTE_SECRET_UNSET" in data.message and "url" not in data.detail, data.message


def test_a_401_with_no_oauth_metadata_anywhere_is_http_error_saying_so(state: Path) -> None:
    with start_http_fixture("http_errors.py") as (base, _):
        bridge = make_bridge(f"{base}/status/401")
        try:
            data = error(bridge.list_tools("remote"), "http_error")
        finally:
            bridge.close()
    assert data.detail["status"] == 401
    assert "publishes no OAuth metadata" in data.message, data.message


async def test_the_loopback_callback_serves_every_authorization_of_its_sign_in() -> None:
    """A flow may authorize more than once (a step-up inside one sign-in): each wait gets the answer
    of its own authorization, never the first one's again."""
    callback = LoopbackCallback()
    answers: list[AuthorizationCodeResult] = []

    async def wait_for_the_browser() -> None:
        answers.append(await callback.wait())

    try:
        for n in (1, 2):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_for_the_browser)
                url = f"{callback.uri}?code=c{n}&state=s{n}"
                page = await anyio.to_thread.run_sync(lambda: httpx.get(url, timeout=10))
                assert page.status_code == 200 and "Signed in" in page.text
            assert (answers[-1].code, answers[-1].state) == (f"c{n}", f"s{n}")
        assert callback.came_back
    finally:
        callback.close()
