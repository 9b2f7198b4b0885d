"""Every helper inside the box is as confined as the command, and no Unix socket path is reachable.

Two escapes found in the second round's sandbox, each run here for real beside its twin:
- with registry (proxied) network, bwrap's pid 1 and the forwarder ran without the seccomp filter
  and could be ptraced by the command: attach, make the helper open an AF_UNIX socket, take the
  descriptor with pidfd_getfd. Now the forwarder is pid 1 and non-dumpable: the command can attach
  to nothing but its own children, and the forwarder still forwards;
- a `socketpair(AF_UNIX, SOCK_DGRAM)` and `sendto(path)` delivered a datagram to a host socket in
  every mode. Now such a pair is refused; stream pairs and UDP still work.

Nothing but loopback is dialled: the listed name resolves to a loopback echo server.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal
from sandbox_box import CHILD_PROBE, Box
from test_proxy import Echo, Lookups, running, serve_route

from sandbox import FilteringProxy
from sandbox.network import NetworkSetting

pytestmark = pytest.mark.bwrap
ATTACKS = Path(__file__).with_name("box_attacks.py")
LISTED = ("allowed.test",)
EPERM = "Operation not permitted"


@pytest.fixture
def echo() -> Iterator[Echo]:
    server = Echo()
    yield server
    server.server.close()


@pytest.fixture
def proxy(echo: Echo) -> Iterator[tuple[FilteringProxy, BlockingPortal]]:
    real = FilteringProxy(resolve=Lookups({"allowed.test": ["127.0.0.1"]}), public=lambda a: True, ports=(echo.port,))
    for portal in running(real):
        yield real, portal


def run_in_box(box: Box, proxy: tuple[FilteringProxy, BlockingPortal], script: Path, *args: str,
               network: NetworkSetting) -> dict[str, Any]:  # fmt: skip
    launch = box.launch(box.python, ["-I", str(script), *args], server_network=network)
    if launch.proxy is not None:
        serve_route(proxy[0], proxy[1], launch.proxy)
    proc = box.run(launch)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_the_proxied_command_cannot_ptrace_the_forwarder_nor_take_its_descriptors(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal]
) -> None:
    result = run_in_box(box, proxy, ATTACKS, "helpers", network=LISTED)
    others = result["detail"]["others"]
    assert list(others) == ["1"]  # the forwarder is pid 1: no bwrap init beside it
    forwarder = others["1"]
    assert forwarder["seccomp"] == "0"  # it needs AF_UNIX to reach the proxy ...
    assert forwarder["ptrace"] == EPERM and forwarder["getfd"] == [EPERM]  # ... and is out of reach


def test_the_proxied_command_can_ptrace_and_take_descriptors_of_its_own_child(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal]
) -> None:
    """Twin: ptrace and pidfd_getfd work in the box, so the refusal above is the forwarder's own."""
    own = run_in_box(box, proxy, ATTACKS, "helpers", network=LISTED)["detail"]["own_child"]
    assert own["ptrace"] == "ok" and {0, 1, 2} <= set(own["getfd"])


def test_the_forwarder_still_relays_the_proxied_command_to_its_listed_host(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal], echo: Echo
) -> None:
    result = run_in_box(box, proxy, CHILD_PROBE, "proxy_connect", "allowed.test", str(echo.port), network=LISTED)
    assert result["ok"] and str(result["detail"]).endswith("echo:ping\n")


def test_without_a_proxy_every_other_process_in_the_box_runs_under_the_filter(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal]
) -> None:
    others = run_in_box(box, proxy, ATTACKS, "helpers", network="deny")["detail"]["others"]
    assert others and all(seen["seccomp"] == "2" for seen in others.values())  # bwrap's pid 1 too


@pytest.fixture
def host_dgram(box: Box) -> Iterator[socket.socket]:
    """A datagram socket on the host, at a path the child can see (its workspace)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(str(box.ws / "host.sock"))
        server.setblocking(False)
        yield server


@pytest.mark.parametrize("network", ["deny", "allow", LISTED], ids=["deny", "allow", "proxy"])
def test_a_datagram_to_a_host_unix_socket_is_refused_in_every_mode(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal], host_dgram: socket.socket, network: NetworkSetting
) -> None:
    result = run_in_box(box, proxy, ATTACKS, "dgram", str(box.ws / "host.sock"), network=network)
    assert not result["ok"] and EPERM in result["detail"]
    with pytest.raises(BlockingIOError):
        host_dgram.recv(100)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:  # twin: the socket itself receives
        sender.sendto(b"from the host", str(box.ws / "host.sock"))
    assert host_dgram.recv(100) == b"from the host"


@pytest.mark.parametrize("network", ["deny", LISTED], ids=["deny", "proxy"])
def test_udp_datagrams_and_unix_stream_pairs_still_work_in_the_box(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal], network: NetworkSetting
) -> None:
    """Twin: sendto itself and socketpair for subprocess pipes are not refused."""
    assert run_in_box(box, proxy, ATTACKS, "udp", network=network) == {"ok": True, "detail": "udp inside"}
    assert run_in_box(box, proxy, ATTACKS, "stream_pair", network=network) == {"ok": True, "detail": "x"}
