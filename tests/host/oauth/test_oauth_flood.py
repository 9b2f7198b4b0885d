"""A stranger floods the OAuth face (registration, /authorize, huge bodies) and the owner still pairs.

Each attack runs against a real face on 127.0.0.1; strangers and the owner are told apart as a
tunnel on this machine tells them apart (`X-Forwarded-For`), and each attack stands beside its
twin: the owner's own client, or the same request at a size that is allowed.
"""

from __future__ import annotations

import json
import select
import socket
from urllib.parse import urlsplit

from oauth_support import LOOPBACK_REDIRECT, RawClient, initialize_with, redirect_params, register

from bridge.host.oauth import list_clients, list_pending
from bridge.host.oauth.limits import MAX_BODY, MAX_CLIENT_NAME, MAX_CLIENTS

STRANGER = "203.0.113.9"
OWNER = "198.51.100.7"


def stranger(n: int) -> str:
    """One of many addresses a distributed stranger sends from."""
    return f"192.0.2.{n % 250 + 1}" if n < 250 else f"198.18.{n // 250}.{n % 250 + 1}"


def test_the_owner_registers_and_pairs_after_a_flood_of_registrations(serve) -> None:
    served = serve()
    paired = RawClient.registered(served, OWNER, client_name="Owner's first client")
    kept = paired.tokens_by_consent(served.state_dir)

    for n in range(MAX_CLIENTS):  # one source, then many: every table slot taken
        if n < 16:
            assert register(served, STRANGER, client_name=f"flood {n}").status_code == 201
        assert register(served, stranger(n), client_name=f"spread {n}").status_code == 201
    owner = RawClient.registered(served, OWNER, client_name="Owner")
    for n in range(16):  # the flood goes on while the owner pairs
        assert register(served, STRANGER, client_name=f"more {n}").status_code == 201
    tokens = owner.tokens_by_consent(served.state_dir)

    assert initialize_with(served, tokens["access_token"]).status_code == 200
    assert initialize_with(served, kept["access_token"]).status_code == 200  # the twin: kept through it all
    names = [c.client_name for c in list_clients(served.state_dir)]
    assert len(names) == MAX_CLIENTS and "Owner's first client" in names and "Owner" in names


def test_the_owner_pairs_while_strangers_hold_open_authorize_requests(serve) -> None:
    served = serve()
    flooders = [RawClient.registered(served, STRANGER) for _ in range(6)]
    flooders += [RawClient.registered(served, stranger(n)) for n in range(16)]
    for client in flooders:
        assert client.authorize().status_code == 302
        assert client.authorize().status_code == 302

    owner = RawClient.registered(served, OWNER, client_name="Owner")
    tokens = owner.tokens_by_consent(served.state_dir)
    last, fields = flooders[-1].open_consent()  # the twin: a stranger's request is filed too, not refused

    assert initialize_with(served, tokens["access_token"]).status_code == 200
    assert last.status_code == 200 and fields["request"]
    assert len(list_pending(served.state_dir)) <= 16


def test_a_4_mib_client_name_is_refused_and_a_short_one_registered(serve) -> None:
    served = serve()

    huge = register(served, client_name="x" * (4 * 1024 * 1024))
    long = register(served, client_name="x" * (MAX_CLIENT_NAME + 1))
    fine = register(served, client_name="x" * MAX_CLIENT_NAME)

    assert huge.status_code == 413 and huge.json()["error"] == "invalid_request"
    assert long.status_code == 400 and long.json() == {
        "error": "invalid_client_metadata", "error_description": f"client_name is longer than {MAX_CLIENT_NAME} characters"
    }
    assert fine.status_code == 201
    assert [c.client_name for c in list_clients(served.state_dir)] == ["x" * MAX_CLIENT_NAME]


def test_every_table_full_of_the_largest_allowed_entries_keeps_the_state_file_under_a_megabyte(serve) -> None:
    served = serve()
    uris = [f"{LOOPBACK_REDIRECT}/{n}/" + "a" * 1900 for n in range(3)]
    for n in range(MAX_CLIENTS + 1):
        response = register(served, stranger(n), client_name="n" * MAX_CLIENT_NAME, redirect_uris=uris,
                            software_id="s" * 1200, contacts=["c" * 100] * 5)
        assert response.status_code == 201, response.text
    size = len(json.dumps(response.json()))
    for n in range(20):
        client = RawClient(served, response.json()["client_id"], uris[0], source=stranger(n))
        assert client.authorize(state="t" * 2048).status_code == 302
    too_long = RawClient(served, response.json()["client_id"], uris[0]).authorize(state="t" * 2049)

    assert size > 7000  # each client is near the metadata bound
    assert redirect_params(too_long)["error"] == "invalid_request"
    assert (served.state_dir / "oauth" / "state.json").stat().st_size < 1024 * 1024


def _rss() -> int:
    """This process's resident memory in bytes (the face under test serves in it)."""
    line = next(x for x in open("/proc/self/status").read().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def _post_raw(url: str, path: str, headers: str, limit: int) -> tuple[bytes, int]:
    """POST to `path` with `headers`, then a chunked form body of up to `limit` bytes, sent until the
    bridge answers; its answer's first bytes and how much was sent."""
    parts = urlsplit(url)
    sent = 0
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n{headers}\r\n".encode())
        chunk = b"A" * (64 * 1024)
        framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
        try:
            while sent < limit and not select.select([sock], [], [], 0)[0]:
                sock.sendall(framed)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the bridge answered and closed: it reads no more
        return sock.recv(4096), sent


def test_a_huge_consent_form_is_refused_at_the_limit_and_a_form_under_it_accepted(serve) -> None:
    served = serve()
    client = RawClient.registered(served)
    _page, fields = client.open_consent()
    (pending,) = list_pending(served.state_dir)
    form = "Content-Type: application/x-www-form-urlencoded\r\n"
    before = _rss()

    chunked, sent = _post_raw(served.base_url, "/oauth/consent", form + "Transfer-Encoding: chunked\r\n", 900 << 20)
    declared, _ = _post_raw(served.base_url, "/oauth/consent", form + f"Content-Length: {900 << 20}\r\n", 0)
    grown = _rss() - before
    padded = {k: v for k, v in fields.items() if k != "_action"} | {"pad": "p" * (MAX_BODY - 200)}
    accepted = client.browser.post(fields["_action"], data=padded | {"code": pending.pairing_code})

    assert chunked.startswith(b"HTTP/1.1 413 ") and declared.startswith(b"HTTP/1.1 413 ")
    assert sent < 64 << 20 and grown < 32 << 20  # it stopped reading long before 900 MB, and kept none of it
    assert redirect_params(accepted)["code"]
