"""The filtering proxy served on a 127.0.0.1 TCP port (the macOS route), driven by real CONNECT clients.

Seatbelt cannot run here, so this is the part of the macOS network that is tested for real: the
port `loopback_route` binds, the proxy serving it, and curl and `http.client` tunnelling through it.
As in test_proxy.py nothing but loopback is ever dialled: names off a list are refused before
any lookup, and the listed name is pointed at a loopback HTTP server by an injected resolver,
with the public-address rule relaxed only for the positive twins.
"""

from __future__ import annotations

import http.client
import http.server
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_proxy import Lookups, running

from sandbox import FilteringProxy, ProxyRoute
from sandbox.proxy import DENIED_HEADER, loopback_route

BODY = b"hello from upstream\n"


class Upstream:
    """A loopback HTTP server standing in for a registry: GET answers BODY."""

    def __init__(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)

            def log_message(self, format: str, *args: object) -> None:
                return  # keep the test output quiet

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def names(tmp_path: Path) -> Path:
    """Where route names live; loopback routes never create anything there."""
    return tmp_path


def tunnel_get(route: ProxyRoute, host: str, port: int) -> bytes:
    """GET / on host:port through the proxy with the standard library's CONNECT client."""
    assert route.port is not None
    conn = http.client.HTTPConnection("127.0.0.1", route.port, timeout=10)
    conn.set_tunnel(host, port)
    try:
        conn.request("GET", "/")
        return conn.getresponse().read()
    finally:
        conn.close()


def curl(route: ProxyRoute, host: str, port: int) -> subprocess.CompletedProcess[str]:
    """curl through the proxy as npm or uv would use it: HTTPS_PROXY-style, CONNECT by name."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    return subprocess.run(
        ["curl", "-sS", "-v", "--max-time", "10", "--proxytunnel", "--proxy", f"http://127.0.0.1:{route.port}",
         f"http://{host}:{port}/"],
        capture_output=True, text=True, timeout=30, env=env, check=False,
    )  # fmt: skip


def raw_connect(route: ProxyRoute, target: str) -> bytes:
    assert route.port is not None
    with socket.create_connection(("127.0.0.1", route.port), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        return s.recv(4096)


def test_a_listed_name_is_tunnelled_for_real_clients(names: Path, upstream: Upstream) -> None:
    lookups = Lookups({"allowed.test": ["127.0.0.1"]})
    proxy = FilteringProxy(resolve=lookups, public=lambda a: True, ports=(upstream.port,))
    route = loopback_route(names, ("allowed.test",))
    for portal in running(proxy):
        portal.call(proxy.listen, route)
        via_stdlib = tunnel_get(route, "allowed.test", upstream.port)
        via_curl = curl(route, "allowed.test", upstream.port)
    assert via_stdlib == BODY
    assert via_curl.returncode == 0 and via_curl.stdout.encode() == BODY, via_curl.stderr
    assert lookups.asked == ["allowed.test", "allowed.test"]  # resolved by the proxy, by name
    assert not list(names.iterdir())  # no Unix socket is made for a loopback route


def test_a_host_off_the_list_is_refused_with_the_reason_and_no_lookup(names: Path, upstream: Upstream) -> None:
    lookups = Lookups({})
    proxy = FilteringProxy(resolve=lookups, public=lambda a: True, ports=(upstream.port,))
    route = loopback_route(names, ("allowed.test",))
    for portal in running(proxy):
        portal.call(proxy.listen, route)
        with pytest.raises(OSError, match="403"):
            tunnel_get(route, "evil.example.com", upstream.port)
        refused = curl(route, "evil.example.com", upstream.port)
    assert refused.returncode != 0 and "403" in refused.stderr
    assert f"{DENIED_HEADER}: evil.example.com is not on this server's network list (allowed.test)" in refused.stderr
    assert lookups.asked == []
    assert [d.host for d in proxy.denials(route.socket)] == ["evil.example.com", "evil.example.com"]


def test_ip_literals_and_names_resolving_inside_are_refused(names: Path) -> None:
    lookups = Lookups({"inside.test": ["10.0.0.7"], "loop.test": ["127.0.0.1"]})
    proxy = FilteringProxy(resolve=lookups)
    route = loopback_route(names, ("inside.test", "loop.test"))
    for portal in running(proxy):
        portal.call(proxy.listen, route)
        literals = [raw_connect(route, f"{host}:443") for host in ("127.0.0.1", "[::1]", "169.254.169.254", "2130706433")]
        inside = [raw_connect(route, f"{host}:443") for host in ("inside.test", "loop.test")]
    assert all(a.startswith(b"HTTP/1.1 403") and b"IP addresses are not proxied" in a for a in literals)
    assert all(a.startswith(b"HTTP/1.1 403") and b"resolves to a non-public address" in a for a in inside)
    assert lookups.asked == ["inside.test", "loop.test"]  # the literals were never looked up


def test_each_list_has_its_own_port_and_a_port_serves_only_its_list(names: Path, upstream: Upstream) -> None:
    """A child that may reach only its own port cannot borrow another server's wider list."""
    proxy = FilteringProxy(
        resolve=Lookups({"a.test": ["127.0.0.1"], "b.test": ["127.0.0.1"]}), public=lambda a: True, ports=(upstream.port,)
    )
    narrow = loopback_route(names, ("a.test",))
    wide = loopback_route(names, ("a.test", "b.test"))
    assert narrow.port != wide.port
    assert loopback_route(names, ("a.test",)) == narrow  # the same list keeps its port
    for portal in running(proxy):
        portal.call(proxy.listen, narrow)
        portal.call(proxy.listen, wide)
        through_wide = tunnel_get(wide, "b.test", upstream.port)
        with pytest.raises(OSError, match="403"):
            tunnel_get(narrow, "b.test", upstream.port)
    assert through_wide == BODY
    assert [d.host for d in proxy.denials(narrow.socket)] == ["b.test"] and proxy.denials(wide.socket) == []


def test_the_port_listens_on_loopback_only_and_outlives_one_proxy(names: Path, upstream: Upstream) -> None:
    """The bridge's proxy may restart (tests do): the next one serves the same bound port."""
    route = loopback_route(names, ("allowed.test",))
    with socket.create_connection(("127.0.0.1", route.port or 0), timeout=5) as probe:
        assert probe.getpeername()[0] == "127.0.0.1"
    answers = []
    for _ in range(2):
        proxy = FilteringProxy(resolve=Lookups({"allowed.test": ["127.0.0.1"]}), public=lambda a: True, ports=(upstream.port,))
        for portal in running(proxy):
            portal.call(proxy.listen, route)
            answers.append(tunnel_get(route, "allowed.test", upstream.port))
    assert answers == [BODY, BODY]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", route.port or 0), timeout=2).close()


def test_a_port_this_process_did_not_bind_is_not_served(names: Path) -> None:
    proxy = FilteringProxy(resolve=Lookups({}))
    route = ProxyRoute(names / "p-unbound.sock", ("a.test",), port=1)
    for portal in running(proxy):
        with pytest.raises(RuntimeError, match="not bound by loopback_route"):
            portal.call(proxy.listen, route)
