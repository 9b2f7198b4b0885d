"""The macOS launch (`prepare_launch`'s seatbelt branch) run on Linux, where sandbox-exec cannot run.

Two things are replaced, and only these: the backend probe (it would run sandbox-exec) and
sandbox-exec itself, by a stand-in that checks the argv shape and execs what follows `--`. The
rest of what the launch rendered runs for real: the loopback proxy route and the child's
HTTPS_PROXY. What the profile itself allows is golden-tested in test_seatbelt_profile.py and
checked on a Mac by scripts/macos_sandbox_smoke.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal
from sandbox_box import Box
from test_proxy import Echo, Lookups, running

import sandbox.launch
import sandbox.seatbelt
from sandbox import FilteringProxy, Launch
from sandbox.probe import Backend

CHILD_PROBE = Path(__file__).with_name("child_probe.py")
STAND_IN = f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
assert args[0] == "-p" and args[1].startswith("(version 1)"), args[:2]
cut = args.index("--")
assert all(a.startswith("-D") for a in args[2:cut]), args[2:cut]
os.execv(args[cut + 1], args[cut + 1:])
"""


@pytest.fixture
def mac(box: Box, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Box:
    """`box`, launching through the seatbelt branch with the stand-in sandbox-exec."""
    stand_in = tmp_path / "sandbox-exec"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    monkeypatch.setattr(sandbox.launch, "_backend", lambda config, as_root: Backend("seatbelt", str(stand_in)))
    monkeypatch.setattr(sandbox.seatbelt, "SANDBOX_EXEC", str(stand_in))
    children_tmp = tmp_path / "private-tmp"
    children_tmp.mkdir()
    monkeypatch.setattr(sandbox.launch, "CHILD_TMP_PARENT_DARWIN", str(children_tmp))
    return box


@pytest.fixture
def proxy(echo: Echo) -> Iterator[tuple[FilteringProxy, BlockingPortal]]:
    served = FilteringProxy(resolve=Lookups({"allowed.test": ["127.0.0.1"]}), public=lambda a: True, ports=(443, echo.port))
    for portal in running(served):
        yield served, portal


@pytest.fixture
def echo() -> Iterator[Echo]:
    server = Echo()
    yield server
    server.server.close()


def probe(mac: Box, *args: str, network: tuple[str, ...] | None = ("allowed.test",)) -> Launch:
    return mac.launch(mac.python, ["-I", str(CHILD_PROBE), *args], server_network=network, backend="seatbelt")


def run(mac: Box, launch: Launch) -> dict[str, object]:
    proc = mac.run(launch)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_a_proxied_child_gets_its_lists_loopback_port_in_profile_and_environment(
    mac: Box, proxy: tuple[FilteringProxy, BlockingPortal], echo: Echo
) -> None:
    served, portal = proxy
    launch = probe(mac, "proxy_connect", "allowed.test", str(echo.port))
    assert launch.proxy is not None and launch.proxy.port is not None
    assert f"-DPROXY=localhost:{launch.proxy.port}" in launch.args
    assert launch.env["HTTPS_PROXY"] == launch.env["npm_config_https_proxy"] == f"http://127.0.0.1:{launch.proxy.port}"
    portal.call(served.listen, launch.proxy)
    result = run(mac, launch)
    assert result["ok"] and str(result["detail"]).endswith("echo:ping\n")


def test_a_proxied_child_is_refused_a_host_off_its_list(mac: Box, proxy: tuple[FilteringProxy, BlockingPortal]) -> None:
    served, portal = proxy
    launch = probe(mac, "proxy_connect", "evil.example.com", "443")
    assert launch.proxy is not None
    portal.call(served.listen, launch.proxy)
    result = run(mac, launch)
    assert not result["ok"] and "not on this server's network list (allowed.test)" in str(result["detail"])
    assert [d.host for d in served.denials(launch.proxy.socket, since=launch.started)] == ["evil.example.com"]


def test_servers_with_different_lists_get_different_ports(mac: Box) -> None:
    one = probe(mac, "own_environ", network=("a.test",))
    again = probe(mac, "own_environ", network=("a.test",))
    other = probe(mac, "own_environ", network=("a.test", "b.test"))
    assert one.proxy and again.proxy and other.proxy
    assert one.proxy.port == again.proxy.port != other.proxy.port
    for launch in (one, again, other):
        sandbox.launch.finish_launch(launch)


def test_a_child_without_a_proxy_network_gets_no_proxy(mac: Box) -> None:
    launch = probe(mac, "own_environ", network=None)
    assert launch.proxy is None and launch.policy is not None and launch.policy.network == "deny"
    assert not any(arg.startswith("-DPROXY=") for arg in launch.args)
    environ = run(mac, launch)["detail"]
    assert isinstance(environ, dict) and "HTTPS_PROXY" not in environ and "HTTPS_PROXY" not in launch.env
