"""The connect-time SSRF check: names are resolved by the bridge, judged, then dialled at the judged
address with Host and SNI kept; every request and redirect hop is judged again.

The resolver is the test's own, so a name can "rebind" between lookups without any DNS; the only
addresses ever dialled are on loopback, and a refused target is shown to get no connection at all.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx2
import pytest
from helpers import start_http_fixture
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from bridge.downstream.pinning import PinnedTransport, Refused
from bridge.ssrf import Reach


class Resolver:
    """Answers each lookup with the next list of addresses (the last one repeats), and counts lookups."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def client(reach: Reach, resolver: Resolver, refusals: list[str]) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=PinnedTransport(reach, resolver, refusals.append), trust_env=False, timeout=10)


@pytest.fixture(scope="module")
def hostile_port() -> Iterator[int]:
    with start_http_fixture("hostile_http.py") as (base, _):
        yield int(base.rsplit(":", 1)[1])


async def test_a_name_is_dialled_at_the_judged_address_and_keeps_its_host_header(hostile_port: int) -> None:
    """The SDK's own client, through the transport: the server quotes the Host it was sent."""
    resolver, refusals = Resolver(["127.0.0.1"]), []
    http = client("no-metadata", resolver, refusals)
    url = f"http://rebind.test:{hostile_port}/reflect"
    with pytest.RaisesGroup(MCPError, flatten_subgroups=True) as caught:
        async with http, streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
    (answer,) = caught.value.exceptions[0].exceptions
    assert f"Host: rebind.test:{hostile_port}" in answer.message
    assert resolver.asked and refusals == []


async def test_a_name_that_resolves_to_loopback_is_refused_before_any_connection(untouched: socket.socket) -> None:
    resolver, refusals = Resolver(["127.0.0.1"]), []
    async with client("public", resolver, refusals) as http:
        with pytest.raises(Refused):
            await http.get(f"http://rebind.test:{untouched.getsockname()[1]}/mcp")
    assert refusals == ["rebind.test resolves to 127.0.0.1 is this machine (loopback)"]


async def test_one_forbidden_address_among_public_ones_refuses_the_name() -> None:
    resolver, refusals = Resolver(["93.184.215.14", "169.254.169.254"]), []
    async with client("public", resolver, refusals) as http:
        with pytest.raises(Refused):
            await http.get("https://mixed.test/mcp")
    assert "169.254.169.254 is a cloud metadata service" in refusals[0]


async def test_every_redirect_hop_is_resolved_and_judged_again(hostile_port: int) -> None:
    """The first lookup is loopback (allowed here), the next rebinds to the metadata service: the
    hop that follows the redirect is refused before it is dialled."""
    resolver, refusals = Resolver(["127.0.0.1"], ["169.254.169.254"]), []
    async with client("no-metadata", resolver, refusals) as http:
        with pytest.raises(Refused):
            await http.get(f"http://rebind.test:{hostile_port}/loop", follow_redirects=True)
    assert resolver.asked == ["rebind.test", "rebind.test"]
    assert "cloud metadata" in refusals[0]


async def test_an_address_literal_is_judged_without_a_lookup(untouched: socket.socket) -> None:
    resolver, refusals = Resolver(["127.0.0.1"]), []
    async with client("public", resolver, refusals) as http:
        with pytest.raises(Refused):
            await http.get(f"http://[::ffff:127.0.0.1]:{untouched.getsockname()[1]}/mcp")
    assert resolver.asked == [] and "127.0.0.1" in refusals[0]
