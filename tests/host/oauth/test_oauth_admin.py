"""What `mcp-bridge auth` reads and does, from the state directory alone."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest
from mcp.shared.auth import OAuthClientInformationFull
from oauth_support import LOOPBACK_REDIRECT, RawClient, initialize_with

from bridge.host.oauth import list_clients, list_pending, revoke_client
from bridge.host.oauth.state import ClientRecord, OAuthState
from bridge.host.oauth.store import OAuthStore


def test_pending_lists_the_code_the_page_accepts(serve) -> None:
    served = serve()
    client = RawClient.registered(served, client_name="Pending client")
    _page, fields = client.open_consent()

    (pending,) = list_pending(served.state_dir)

    assert pending.client_name == "Pending client"
    assert (pending.redirect_uri, pending.attempts_left) == (LOOPBACK_REDIRECT, 5)
    assert client.submit(fields, pending.pairing_code).status_code == 302


def test_clients_lists_registration_and_use(serve) -> None:
    served = serve()
    used = RawClient.registered(served, client_name="used")
    used.tokens_by_consent(served.state_dir)
    RawClient.registered(served, client_name="idle")

    clients = {c.client_name: c for c in list_clients(served.state_dir)}

    assert clients["used"].last_used_at is not None and clients["used"].active_tokens == 2
    assert clients["idle"].last_used_at is None and clients["idle"].active_tokens == 0
    assert clients["used"].redirect_uris == [LOOPBACK_REDIRECT]


def test_revoke_names_one_client_or_refuses(serve) -> None:
    served = serve()
    first = RawClient.registered(served, client_name="twin")
    RawClient.registered(served, client_name="twin")

    with pytest.raises(LookupError, match="2 clients"):
        revoke_client(served.state_dir, "twin")
    with pytest.raises(LookupError, match="no client"):
        revoke_client(served.state_dir, "nobody")
    assert revoke_client(served.state_dir, first.client_id).client_id == first.client_id
    assert len(list_clients(served.state_dir)) == 1


def test_the_revocation_endpoint_revokes_the_whole_grant(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    tokens = client.tokens_by_consent(served.state_dir)

    # The SDK's RevocationRequest declares `client_secret: str | None` without a default: a public
    # client has to send it empty.
    form = {"token": tokens["refresh_token"], "client_id": client.client_id, "client_secret": ""}
    response = httpx.post(f"{served.base_url}/revoke", data=form, trust_env=False)

    assert response.status_code == 200
    assert initialize_with(served, tokens["access_token"]).status_code == 401


def test_concurrent_writers_lose_no_update(tmp_path: Path) -> None:
    def add(n: int) -> None:
        store = OAuthStore(tmp_path)  # one store per writer, as separate processes have
        for i in range(10):
            with store.update() as state:
                info = OAuthClientInformationFull(client_id=f"c{n}-{i}", redirect_uris=[LOOPBACK_REDIRECT])
                state.clients[info.client_id] = ClientRecord(info=info, kind="dcr", registered_at=0)

    writers = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()

    assert len(OAuthStore(tmp_path).read().clients) == 40


def test_clients_that_never_got_a_token_make_room_for_new_ones() -> None:
    state = OAuthState()
    for n, used in enumerate([None, 5.0, None]):
        info = OAuthClientInformationFull(client_id=f"c{n}", redirect_uris=[LOOPBACK_REDIRECT])
        state.clients[info.client_id] = ClientRecord(info=info, kind="dcr", registered_at=0, last_used_at=used)

    assert not state.make_room_for_client(now=10, unused_after_s=100, most=3)  # all still young
    assert state.make_room_for_client(now=1000, unused_after_s=100, most=3)
    assert list(state.clients) == ["c1"]
