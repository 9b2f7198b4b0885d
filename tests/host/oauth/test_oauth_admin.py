"""What `mcp-bridge auth` reads and does, from the state directory alone."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from mcp.shared.auth import OAuthClientInformationFull
from oauth_support import LOOPBACK_REDIRECT, RawClient, initialize_with

from bridge.host.oauth import list_clients, list_pending, revoke_client
from bridge.host.oauth.state import ClientRecord, OAuthState, PendingRequest
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
                state.clients[info.client_id] = ClientRecord(info=info, kind="dcr", registered_at=time.time())

    writers = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()

    assert len(OAuthStore(tmp_path).read().clients) == 40


def test_a_full_table_forgets_the_oldest_unused_client_of_the_busiest_source() -> None:
    state = OAuthState()

    def record(source: str, registered_at: float, used: float | None = None) -> ClientRecord:
        info = OAuthClientInformationFull(client_id="x", redirect_uris=[LOOPBACK_REDIRECT])
        return ClientRecord(info=info, kind="dcr", registered_at=registered_at, last_used_at=used, source=source)

    state.admit_client("paired", record("owner", 0, used=1), most=4, per_source=2)
    state.admit_client("a1", record("a", 1), most=4, per_source=2)
    state.admit_client("b1", record("b", 2), most=4, per_source=2)
    state.admit_client("a2", record("a", 3), most=4, per_source=2)
    assert state.admit_client("a3", record("a", 4), most=4, per_source=2)  # source a's own oldest goes
    assert sorted(state.clients) == ["a2", "a3", "b1", "paired"]
    assert state.admit_client("new", record("owner", 5), most=4, per_source=2)  # the busiest source pays
    assert sorted(state.clients) == ["a3", "b1", "new", "paired"]
    state.clients = {cid: rec.model_copy(update={"last_used_at": 9}) for cid, rec in state.clients.items()}
    assert not state.admit_client("late", record("c", 6), most=4, per_source=2)  # every one has a token


def test_a_client_with_a_request_waiting_is_forgotten_last_whoever_named_it_first() -> None:
    state = OAuthState()

    def record(source: str, registered_at: float) -> ClientRecord:
        info = OAuthClientInformationFull(client_id="x", redirect_uris=[LOOPBACK_REDIRECT])
        return ClientRecord(info=info, kind="cimd", registered_at=registered_at, source=source)

    state.admit_client("https://chatgpt.example/oauth.json", record("stranger", 0), most=8, per_source=2)
    owner_request = PendingRequest(
        source="owner", client_id="https://chatgpt.example/oauth.json", client_name="ChatGPT", redirect_uri=LOOPBACK_REDIRECT,
        redirect_uri_provided_explicitly=True, scopes=[], code_challenge="c", state=None, resource=None,
        pairing_code="AAAA-AAAA", created_at=1, expires_at=10**10, attempts_left=5,
    )
    state.pending["owner's"] = owner_request
    for n in range(20):  # the stranger floods from the source that first named the public client
        assert state.admit_client(f"flood-{n}", record("stranger", 2 + n), most=8, per_source=2)

    assert "https://chatgpt.example/oauth.json" in state.clients and "owner's" in state.pending
    assert sorted(state.clients) == ["flood-19", "https://chatgpt.example/oauth.json"]  # the twin: the flood's own go
