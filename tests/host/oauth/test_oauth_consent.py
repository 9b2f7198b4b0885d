"""The owner's consent: the page, the pairing code, its attempts and its lifetime."""

from __future__ import annotations

import logging
import re
import time

import pytest
from oauth_support import (
    MemoryTokens,
    Owner,
    RawClient,
    echo_through,
    redirect_params,
    sdk_oauth,
)

from bridge.host.oauth import list_pending


def test_the_page_names_the_client_and_its_redirect_uri_escaped(serve) -> None:
    served = serve()
    client = RawClient.registered(served, client_name='<script>alert("x")</script>')

    page, fields = client.open_consent()

    assert page.status_code == 200
    assert "<script>" not in page.text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page.text
    assert client.redirect_uri in page.text
    assert re.search(r"<input name=code ", page.text)
    assert fields["_action"].startswith(f"{served.base_url}/oauth/consent?request=")
    assert fields["request"] == fields["_action"].split("request=")[1]
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"


def test_the_right_code_redirects_with_code_and_state(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    _page, fields = client.open_consent()
    (pending,) = list_pending(served.state_dir)

    params = redirect_params(client.submit(fields, pending.pairing_code.lower().replace("-", " ")))

    assert params["state"] == "st-1" and params["code"]
    assert list_pending(served.state_dir) == []


def test_five_wrong_codes_refuse_the_request(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    _page, fields = client.open_consent()
    (pending,) = list_pending(served.state_dir)

    for left in (4, 3, 2, 1):
        wrong = client.submit(fields, "AAAA-AAAA")
        assert wrong.status_code == 400 and f"{left} attempt(s) left" in wrong.text
    refused = redirect_params(client.submit(fields, "AAAA-AAAA"))

    assert refused == {"error": "access_denied", "error_description": "Too many wrong pairing codes.", "state": "st-1"}
    assert client.submit(fields, pending.pairing_code).status_code == 404  # the request is gone
    assert list_pending(served.state_dir) == []


def test_an_expired_code_refuses_the_request(serve) -> None:
    served = serve(pairing_code_ttl_s=1)
    client = RawClient.registered(served)
    _page, fields = client.open_consent()
    (pending,) = list_pending(served.state_dir)
    time.sleep(1.2)

    refused = redirect_params(client.submit(fields, pending.pairing_code))

    assert refused["error"] == "access_denied" and refused["error_description"] == "The pairing code expired."


async def test_the_owner_can_read_the_code_from_the_log(serve, state_dir, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_bridge.oauth")

    def from_log(client_id: str) -> str:
        lines = [r.getMessage() for r in caplog.records if "pairing code" in r.getMessage()]
        return re.search(r"pairing code ([A-Z0-9]{4}-[A-Z0-9]{4})", lines[-1]).group(1)

    served = serve()
    owner = Owner(state_dir, read_code=from_log)

    assert await echo_through(served, sdk_oauth(served, owner, MemoryTokens())) == ["echo"]
    assert "'SDK test client'" in caplog.text
