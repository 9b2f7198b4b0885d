"""One judgement of an address for the filtering proxy and for `bridge.ssrf`, pure.

The proxy used to keep its own table, which let through IPv6 spellings of inside addresses that
`bridge.ssrf` refused (NAT64, 6to4, IPv4-compatible, Teredo). Each refusal stands beside a public
twin of the same kind, and the last test drives the real proxy (no address but loopback dialled:
the refused names are never connected, and the resolver is injected).
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_proxy import Lookups, connect, running, serve_route

from bridge.ssrf import refusal
from sandbox import FilteringProxy
from sandbox.addresses import is_public, public_refusal
from sandbox.proxy import route_for

INSIDE = {
    "64:ff9b::7f00:1": "127.0.0.1",  # NAT64 around loopback
    "64:ff9b::a00:1": "10.0.0.1",  # NAT64 around a private address
    "64:ff9b::a9fe:a9fe": "169.254.169.254",  # NAT64 around cloud metadata
    "64:ff9b:1::1": "64:ff9b:1::1",  # NAT64 local-use prefix
    "2002:7f00:1::": "127.0.0.1",  # 6to4 around loopback
    "2002:c0a8:101::1": "192.168.1.1",  # 6to4 around a private address
    "::7f00:1": "127.0.0.1",  # IPv4-compatible loopback
    "::a00:1": "10.0.0.1",  # IPv4-compatible private
    "::ffff:7f00:1": "127.0.0.1",  # IPv4-mapped loopback
    "::ffff:0:a00:1": "::ffff:0:a00:1",  # IPv4-translated (SIIT)
    "2001:0:4136:e378:8000:63bf:3fff:fdd2": "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
    "2001::1": "0.0.0.0",  # Teredo around server 0.0.0.0
    "100::1": "100::1",  # discard only
    "fec0::1": "fec0::1",  # site-local
}
PUBLIC_TWINS = [
    "64:ff9b::808:808",  # NAT64 around 8.8.8.8: what an IPv6-only CI resolves a registry to
    "2002:808:808::1",  # 6to4 around 8.8.8.8
    "::ffff:808:808",  # IPv4-mapped 8.8.8.8
    "2001:4860:4860::8888",
    "8.8.8.8",
    "203.0.113.80",  # documentation range: some CI networks map every public name there
    "2001:db8::1",
]


@pytest.mark.parametrize("address", INSIDE)
def test_ipv6_spellings_of_inside_addresses_are_not_public(address: str) -> None:
    assert not is_public(address)
    why = public_refusal(ipaddress.ip_address(address))
    assert why is not None and why.startswith(INSIDE[address])


@pytest.mark.parametrize("address", PUBLIC_TWINS)
def test_public_addresses_of_every_kind_stay_public(address: str) -> None:
    assert is_public(address)


@pytest.mark.parametrize("address", [*INSIDE, *PUBLIC_TWINS, "127.0.0.1", "10.1.2.3", "100.64.0.1", "169.254.169.254",
                                     "fd00:ec2::254", "fe80::1", "::", "::1", "224.0.0.1", "198.18.0.1", "93.184.215.14"])  # fmt: skip
def test_the_proxy_and_ssrf_judge_every_address_alike(address: str) -> None:
    assert is_public(address) is (refusal(ipaddress.ip_address(address), "public") is None)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    path = Path(f"/tmp/mcp-addr-test-{threading.get_ident() % 10**6}")
    path.mkdir(mode=0o700, exist_ok=True)
    yield path
    path.rmdir()  # the proxy removed its own folder on the way out


def test_the_proxy_refuses_a_listed_name_resolving_to_nat64_around_loopback(short_dir: Path) -> None:
    proxy = FilteringProxy(resolve=Lookups({"nat64.test": ["64:ff9b::7f00:1"], "public.test": ["64:ff9b::808:808"]}))
    route = route_for(short_dir, ("nat64.test", "public.test"))
    for portal in running(proxy):
        serve_route(proxy, portal, route)
        refused = connect(route, "nat64.test", 443)
        denied = [d.host for d in proxy.denials(route.socket)]
    assert refused.startswith(b"HTTP/1.1 403") and b"non-public address (64:ff9b::7f00:1)" in refused
    assert denied == ["nat64.test"]  # its public twin (64:ff9b::808:808) is judged above, not dialled
