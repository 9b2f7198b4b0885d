"""The macOS launch (`prepare_launch`'s seatbelt branch) run on Linux, where sandbox-exec cannot run.

Two things are replaced, and only these: the backend probe (it would run sandbox-exec) and
sandbox-exec itself, by a stand-in that checks the argv shape and execs what follows `--`. The
rest of what the launch rendered runs for real: the loopback proxy route and the child's
HTTPS_PROXY, and the limits prelude (`limits_guard.py`, the same code and the same `ps` flags on
both systems; only what the macOS kernel does with each rlimit is unverified here). What the
profile itself allows is golden-tested in test_seatbelt_profile.py and checked on a Mac by
scripts/macos_sandbox_smoke.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal
from sandbox_box import Box
from test_proxy import Echo, Lookups, running

import sandbox.launch
import sandbox.seatbelt
from sandbox import FilteringProxy, Launch, Limits, explain_exit
from sandbox.limits_guard import user_processes
from sandbox.probe import Backend
from sandbox.seatbelt import LIMITS_GUARD, limits_prelude

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


# --- limits: limits_guard.py in front of sandbox-exec, run for real -----------------------------

WRITE = "import sys\nwith open(sys.argv[1], 'wb') as f:\n    for _ in range(int(sys.argv[2])):\n        f.write(b'x' * 4096)\nprint('wrote')"
OPEN = (
    "import sys\nkept = []\ntry:\n    for _ in range(200):\n        kept.append(open('/dev/null'))\n"
    "except OSError as exc:\n    print(len(kept), exc)\nelse:\n    print(len(kept))"
)


def limited(mac: Box, code: str, *args: str, limits: Limits) -> tuple[Launch, subprocess.CompletedProcess[str]]:
    launch = mac.launch(mac.python, ["-I", "-c", code, *args], backend="seatbelt", limits=limits)
    return launch, mac.run(launch)


def test_a_write_past_the_file_size_limit_fails_and_says_so(mac: Box) -> None:
    target = mac.ws / "big.bin"
    launch, proc = limited(mac, WRITE, str(target), "64", limits=Limits(file_bytes=64 * 1024))
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of the signal killing it
    assert proc.returncode == 1 and "File too large" in proc.stderr and target.stat().st_size == 64 * 1024
    assert launch.limits is not None
    assert (explain_exit(proc.returncode, proc.stderr, launch.limits) or "").startswith("limit hit: file size")
    _, under = limited(mac, WRITE, str(target), "8", limits=Limits(file_bytes=64 * 1024))
    assert under.returncode == 0 and under.stdout.strip() == "wrote" and target.stat().st_size == 32 * 1024


def test_open_files_past_the_limit_are_refused(mac: Box) -> None:
    _, proc = limited(mac, OPEN, limits=Limits(open_files=64))
    opened, _, error = proc.stdout.strip().partition(" ")
    assert int(opened) < 64 and "Too many open files" in error
    _, default = limited(mac, OPEN, limits=Limits())
    assert default.stdout.strip() == "200"


ALLOCATE = (
    "import sys, time\ndata = b'x' * (int(sys.argv[1]) << 20)  # written, so resident\n"
    "print('allocated', flush=True)\nif sys.argv[2] == 'stay':\n    time.sleep(30)"
)
FORK = (
    "import subprocess, sys\nprocs = [subprocess.Popen(['/bin/sleep', '30']) for _ in range(int(sys.argv[1]))]\n"
    "print('forked', len(procs), flush=True)\nif sys.argv[2] == 'stay':\n    procs[0].wait()\n[p.kill() for p in procs]"
)
SHOW_NPROC = "import resource; print(resource.getrlimit(resource.RLIMIT_NPROC)[0])"
MIB = 1 << 20


def test_a_tree_past_the_memory_bound_is_killed_and_said_so(mac: Box) -> None:
    launch, proc = limited(mac, ALLOCATE, "300", "stay", limits=Limits(memory_bytes=100 * MIB))
    assert proc.returncode == 137  # killed while allocating, or once it sleeps
    assert "mcp-bridge limits guard: memory limit hit" in proc.stderr and "bound 100 MiB" in proc.stderr
    assert launch.limits is not None
    assert (explain_exit(proc.returncode, proc.stderr, launch.limits) or "").startswith(
        "limit hit: memory (the sandbox's per-child limit of 100 MiB)"
    )


DETACH = (
    "import os, sys, time\nif os.fork() == 0:\n    if os.fork() == 0:  # a grandchild that leaves the tree\n"
    "        data = b'x' * (int(sys.argv[1]) << 20)\n        time.sleep(30)\n    os._exit(0)\ntime.sleep(30)"
)


def test_memory_of_a_process_that_left_the_tree_still_counts(mac: Box) -> None:
    """Double-forked, it is init's child, but still in the group the bridge started: killed with the rest
    (else it would hold the pipes open, and this run would end by its timeout instead)."""
    _, proc = limited(mac, DETACH, "300", limits=Limits(memory_bytes=100 * MIB))
    assert proc.returncode == 137 and "memory limit hit" in proc.stderr


def test_a_tree_under_the_memory_bound_runs_to_its_end(mac: Box) -> None:
    _, proc = limited(mac, ALLOCATE, "20", "leave", limits=Limits(memory_bytes=100 * MIB))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "allocated\n", "")


def test_a_tree_past_the_process_bound_is_killed_sleepers_and_all(mac: Box) -> None:
    launch, proc = limited(mac, FORK, "12", "stay", limits=Limits(processes=8))
    assert proc.returncode != 0  # killed by the guard, or (not as root) refused a fork by RLIMIT_NPROC
    assert launch.limits is not None
    assert (explain_exit(proc.returncode, proc.stderr, launch.limits) or "").startswith("limit hit: processes")
    sleepers = subprocess.run(["/bin/ps", "-A", "-o", "ppid=,args="], capture_output=True, text=True, check=True)
    assert "/bin/sleep 30" not in sleepers.stdout


def test_a_tree_under_the_process_bound_runs_to_its_end(mac: Box) -> None:
    _, proc = limited(mac, FORK, "3", "leave", limits=Limits(processes=8))
    assert (proc.returncode, proc.stdout) == (0, "forked 3\n")


def test_the_process_rlimit_is_what_the_user_runs_plus_the_bound(mac: Box) -> None:
    before = user_processes()
    _, proc = limited(mac, SHOW_NPROC, limits=Limits(processes=50))
    after = user_processes()
    assert proc.returncode == 0, proc.stderr
    assert min(before, after) + 50 - 10 <= int(proc.stdout) <= max(before, after) + 50 + 10


def test_the_prelude_names_every_bound(mac: Box) -> None:
    launch = mac.launch("/bin/true", [], backend="seatbelt", limits=Limits(memory_bytes=1 << 30, processes=64))
    prelude = [launch.command, *launch.args[: launch.args.index("--")]]
    assert str(LIMITS_GUARD) in prelude and prelude[-5:] == [
        "FSIZE=1073741824", "NOFILE=4096", "NPROC_MORE=64", "WATCH_MEMORY=1073741824", "WATCH_PROCESSES=64",
    ]  # fmt: skip
    assert limits_prelude(Limits(memory_bytes=None, processes=None, file_bytes=None, open_files=None), "py") == []


def test_a_limit_above_the_inherited_hard_limit_is_lowered_to_it_not_refused() -> None:
    show = "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))"
    lower_then_run = (
        "import os, resource, sys\nresource.setrlimit(resource.RLIMIT_NOFILE, (50, 50))\n"
        f"os.execv(sys.executable, [sys.executable, '-I', '-S', {str(LIMITS_GUARD)!r}, 'NOFILE=4096', '--', "
        f"sys.executable, '-c', {show!r}])"
    )
    proc = subprocess.run([sys.executable, "-I", "-c", lower_then_run], capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "(50, 50)", proc.stderr


def test_a_limit_that_cannot_be_set_stops_the_launch_before_the_command(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(LIMITS_GUARD), "NOFILE=-7", "--", "/usr/bin/touch", str(marker)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert proc.returncode != 0 and "ValueError" in proc.stderr and not marker.exists()


def test_the_bridges_stop_reaches_a_watched_child_and_the_guard_leaves_as_it_did() -> None:
    guard = subprocess.Popen(
        [sys.executable, "-I", "-S", str(LIMITS_GUARD), "WATCH_MEMORY=1073741824", "--", "/bin/sleep", "29"],
        start_new_session=True, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    children = Path(f"/proc/{guard.pid}/task/{guard.pid}/children")
    while not children.read_text().strip():  # until the guard has forked its child
        assert guard.poll() is None, guard.stderr.read() if guard.stderr else ""
    os.killpg(guard.pid, signal.SIGTERM)  # what the bridge's stop sends: the whole group
    assert guard.wait(timeout=10) == 128 + signal.SIGTERM
    assert guard.stderr is not None and guard.stderr.read() == ""
