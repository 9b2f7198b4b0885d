"""The filtering proxy alone (on loopback), and a proxied child that reaches only its list.

No test dials anything but loopback: names off the list are refused before any lookup (the
resolver here records every call), and a listed name is pointed at a loopback listener by an
injected resolver, with the public-address rule relaxed only for that positive twin.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from sandbox_box import Box

from sandbox import FilteringProxy, ProxyRoute, explain_network
from sandbox.proxy import host_allowed, is_public, route_for


class Echo:
    """A loopback TCP server answering every line with `echo:` + the line."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(100)
                conn.sendall(b"echo:" + data)


@pytest.fixture
def echo() -> Iterator[Echo]:
    server = Echo()
    yield server
    server.server.close()


class Lookups:
    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return self.answers[host]


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(f"/tmp/mcp-proxy-test-{threading.get_ident() % 10**6}")
    path.mkdir(mode=0o700, exist_ok=True)
    yield path
    for leftover in path.iterdir():
        leftover.unlink()
    path.rmdir()


def running(proxy: FilteringProxy) -> Iterator[BlockingPortal]:
    """The proxy served on a worker loop, as the bridge runs it; cancelled afterwards."""
    with start_blocking_portal() as portal:
        task, _ = portal.start_task(proxy.serve)
        try:
            yield portal
        finally:
            task.cancel()


def connect(route: ProxyRoute, host: str, port: int) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(route.socket))
        s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\n\r\n".encode())
        head = s.recv(4096)
        if b" 200 " in head:
            s.sendall(b"ping")
            head += s.recv(100)
        return head


def serve_route(proxy: FilteringProxy, portal: BlockingPortal, route: ProxyRoute) -> None:
    portal.call(proxy.listen, route)


def test_host_off_the_list_is_refused_by_name_without_a_lookup(short_dir: Path) -> None:
    lookups = Lookups({})
    proxy = FilteringProxy(resolve=lookups)
    route = route_for(short_dir, ("registry.npmjs.org",))
    for portal in running(proxy):
        serve_route(proxy, portal, route)
        answer = connect(route, "evil.example.com", 443)
    assert answer.startswith(b"HTTP/1.1 403") and b"not on this server's network list" in answer
    assert lookups.asked == []
    assert [d.host for d in proxy.denials(route.socket)] == ["evil.example.com"]


def test_ip_literals_are_refused_without_a_lookup(short_dir: Path, echo: Echo) -> None:
    lookups = Lookups({})
    proxy = FilteringProxy(resolve=lookups)
    route = route_for(short_dir, ("registry.npmjs.org",))
    for portal in running(proxy):
        serve_route(proxy, portal, route)
        answers = [connect(route, host, 443) for host in ("127.0.0.1", "[::1]", "2130706433")]
    assert all(a.startswith(b"HTTP/1.1 403") and b"IP addresses" in a for a in answers)
    assert lookups.asked == []


def test_listed_name_resolving_to_loopback_is_refused(short_dir: Path, echo: Echo) -> None:
    proxy = FilteringProxy(resolve=Lookups({"inside.test": ["127.0.0.1"]}))
    route = route_for(short_dir, ("inside.test",))
    for portal in running(proxy):
        serve_route(proxy, portal, route)
        answer = connect(route, "inside.test", 443)
    assert answer.startswith(b"HTTP/1.1 403") and b"non-public address" in answer


def test_listed_name_is_tunnelled_to_the_address_it_resolved_to(short_dir: Path, echo: Echo) -> None:
    """Positive twin: the same name, the public rule relaxed for loopback, and bytes flow."""
    proxy = FilteringProxy(resolve=Lookups({"inside.test": ["127.0.0.1"]}), public=lambda a: True, ports=(echo.port,))
    route = ProxyRoute(short_dir / "p-any.sock", ("inside.test",))
    for portal in running(proxy):
        serve_route(proxy, portal, route)
        answer = connect(route, "inside.test", echo.port)
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"echo:ping")


def test_other_ports_and_methods_are_refused(short_dir: Path) -> None:
    proxy = FilteringProxy(resolve=Lookups({}))
    route = route_for(short_dir, ("a.test",))
    for portal in running(proxy):
        serve_route(proxy, portal, route)
        port = connect(route, "a.test", 22)
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(route.socket))
            s.sendall(b"GET http://a.test/ HTTP/1.1\r\n\r\n")
            method = s.recv(4096)
    assert port.startswith(b"HTTP/1.1 403") and b"port 22" in port
    assert method.startswith(b"HTTP/1.1 405")


@pytest.mark.parametrize(
    "address, public",
    [("93.184.215.14", True), ("203.0.113.80", True), ("10.0.0.1", False), ("192.168.1.1", False), ("169.254.169.254", False), ("100.64.0.1", False),
     ("::1", False), ("fe80::1", False), ("::ffff:127.0.0.1", False), ("224.0.0.1", False)],
)  # fmt: skip
def test_public_address_rule(address: str, public: bool) -> None:
    assert is_public(address) is public


def test_wildcard_entries_cover_subdomains_only() -> None:
    assert host_allowed("a.npmjs.org", ("*.npmjs.org",)) and not host_allowed("npmjs.org.evil", ("*.npmjs.org",))


# --- a proxied child ------------------------------------------------------------------------------


@pytest.fixture
def child_proxy(box: Box, echo: Echo) -> Iterator[tuple[FilteringProxy, BlockingPortal]]:
    proxy = FilteringProxy(
        resolve=Lookups({"allowed.test": ["127.0.0.1"]}), public=lambda a: True, ports=(443, echo.port)
    )
    for portal in running(proxy):
        yield proxy, portal


def proxied_probe(box: Box, proxy: FilteringProxy, portal: BlockingPortal, *args: str) -> dict[str, object]:
    launch = box.launch(box.python, ["-I", str(Path(__file__).with_name("child_probe.py")), *args], server_network=("allowed.test",))
    assert launch.proxy is not None and launch.policy is not None and launch.policy.network == "proxy"
    serve_route(proxy, portal, launch.proxy)
    proc = box.run(launch)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


@pytest.mark.bwrap
def test_proxied_child_reaches_a_listed_host_through_the_forwarder(
    box: Box, child_proxy: tuple[FilteringProxy, BlockingPortal], echo: Echo
) -> None:
    result = proxied_probe(box, *child_proxy, "proxy_connect", "allowed.test", str(echo.port))
    assert result["ok"] and str(result["detail"]).endswith("echo:ping\n")


@pytest.mark.bwrap
def test_proxied_child_is_refused_a_host_off_its_list_by_name(
    box: Box, child_proxy: tuple[FilteringProxy, BlockingPortal]
) -> None:
    proxy, portal = child_proxy
    result = proxied_probe(box, proxy, portal, "proxy_connect", "evil.example.com", "443")
    assert not result["ok"] and "not on this server's network list" in str(result["detail"])
    launch = box.launch("/bin/true", [], server_network=("allowed.test",))
    assert launch.proxy is not None and launch.policy is not None
    denied = [d.host for d in proxy.denials(launch.proxy.socket)]
    assert denied == ["evil.example.com"]
    assert "evil.example.com" in explain_network(launch.policy, denied) and "allowed.test" in explain_network(launch.policy, denied)


@pytest.mark.bwrap
def test_proxied_child_cannot_reach_the_host_loopback_directly(
    box: Box, child_proxy: tuple[FilteringProxy, BlockingPortal], echo: Echo
) -> None:
    result = proxied_probe(box, *child_proxy, "connect", "127.0.0.1", str(echo.port))
    assert not result["ok"]


@pytest.mark.bwrap
def test_proxied_child_still_runs_under_the_seccomp_filter(
    box: Box, child_proxy: tuple[FilteringProxy, BlockingPortal]
) -> None:
    path = box.ws / "agent.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen()
        result = proxied_probe(box, *child_proxy, "connect_unix", str(path))
    assert not result["ok"] and "Operation not permitted" in str(result["detail"])
