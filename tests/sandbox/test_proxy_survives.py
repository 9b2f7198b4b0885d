"""The filtering proxy survives its children: a flood, descriptor exhaustion, a second bridge.

Found in the second round: about 1000 proxy connections ended the proxy's task group (every later
npx/uvx server failed until the bridge restarted), and two bridges shared one socket folder, so one
ending removed the other's socket. Each attack runs for real here beside its twin: a real
sandboxed child floods its forwarder, the proxy is run out of descriptors in a process of its own
with a low open-files limit, two proxies run as two processes. Only loopback is ever dialled.
"""

from __future__ import annotations

import json
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from anyio.from_thread import BlockingPortal
from sandbox_box import CHILD_PROBE, Box, spawn
from test_proxy import Lookups, connect, running, serve_route

from sandbox import FilteringProxy, finish_launch
from sandbox.proxy import MAX_CONNECTIONS_PER_CHILD, ProxyRoute, route_for

PROXY_PROCESS = Path(__file__).with_name("proxy_process.py")
ATTACKS = Path(__file__).with_name("box_attacks.py")
FLOOD = 1000
StartBridge = Callable[..., tuple["subprocess.Popen[str]", Path]]


class Echo(socketserver.ThreadingTCPServer):
    """A loopback TCP server answering each connection's first read with `echo:` + it, one thread
    per connection: a tunnel the flood holds open must not stall the next child's."""

    daemon_threads = True
    request_queue_size = 2 * FLOOD

    def __init__(self) -> None:
        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = self.request.recv(100)
                self.request.sendall(b"echo:" + data)

        super().__init__(("127.0.0.1", 0), Handler)
        self.port = self.server_address[1]


@pytest.fixture
def echo() -> Iterator[Echo]:
    server = Echo()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mcp-surv-", dir="/tmp"))
    yield path
    for leftover in sorted(path.rglob("*"), reverse=True):
        leftover.rmdir() if leftover.is_dir() else leftover.unlink()
    path.rmdir()


def tunnel(route_socket: Path, host: str, port: int) -> bytes:
    """CONNECT through the proxy's Unix socket; on 200, a ping and the answer."""
    return connect(ProxyRoute(route_socket, ()), host, port)


def tunnel_from_another_process(route_socket: Path, host: str, port: int) -> bytes:
    """The same from a process of its own: another child, as the proxy tells peers apart."""
    code = "import sys, test_proxy_survives as t; sys.stdout.buffer.write(t.tunnel(t.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])))"
    done = subprocess.run([sys.executable, "-c", code, str(route_socket), host, str(port)],
                          cwd=Path(__file__).parent, capture_output=True, timeout=60, check=True)  # fmt: skip
    return done.stdout


def flood(route_socket: Path, host: str, port: int, count: int) -> tuple[list[socket.socket], dict[str, int]]:
    """`count` connections asking CONNECT, all held open; how each was answered."""
    held, answers = [], {}
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX)
        held.append(s)
        s.settimeout(20)
        s.connect(str(route_socket))
        try:  # a refusal may be sent, and the connection closed, before the request is written
            s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\n\r\n".encode())
        except BrokenPipeError:
            pass
        try:
            head = s.recv(4096).split(b"\r\n", 1)[0].decode() or "closed"
        except ConnectionResetError:
            head = "closed"
        status = head.split(" ")[1] if " " in head else head
        answers[status] = answers.get(status, 0) + 1
    return held, answers


def release(held: list[socket.socket]) -> None:
    """End each held connection and wait until the proxy has closed its side (and its upstream):
    then the descriptors the flood took are free again."""
    for s in held:
        with s:
            try:
                s.shutdown(socket.SHUT_WR)
                while s.recv(4096):
                    pass
            except OSError:
                continue  # closed by the proxy already


# --- a flood of connections ------------------------------------------------------------------------


@pytest.fixture
def proxy(echo: Echo) -> Iterator[tuple[FilteringProxy, BlockingPortal]]:
    real = FilteringProxy(resolve=Lookups({"allowed.test": ["127.0.0.1"]}), public=lambda a: True, ports=(echo.port,))
    for portal in running(real):
        yield real, portal


def test_a_child_holding_a_thousand_connections_gets_its_bound_and_the_next_child_is_served(
    proxy: tuple[FilteringProxy, BlockingPortal], proxy_dir: Path, echo: Echo
) -> None:
    route = route_for(proxy_dir, ("allowed.test",))
    serve_route(*proxy, route)
    held, answers = flood(route.socket, "allowed.test", echo.port, FLOOD)
    try:
        assert answers == {"200": MAX_CONNECTIONS_PER_CHILD, "503": FLOOD - MAX_CONNECTIONS_PER_CHILD}
        # the twin: another child, while the flood still holds its connections
        assert tunnel_from_another_process(route.socket, "allowed.test", echo.port).endswith(b"echo:ping")
    finally:
        for s in held:
            s.close()


@pytest.mark.bwrap
def test_a_sandboxed_child_flooding_its_forwarder_leaves_the_proxy_serving_the_next_child(
    box: Box, proxy: tuple[FilteringProxy, BlockingPortal], echo: Echo
) -> None:
    real, portal = proxy
    launch = box.launch(box.python, ["-I", str(ATTACKS), "flood", str(FLOOD), "allowed.test", str(echo.port)],
                        server_network=("allowed.test",))  # fmt: skip
    assert launch.proxy is not None
    serve_route(real, portal, launch.proxy)
    flooder = spawn(launch, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert flooder.stdout is not None
        answers = json.loads(flooder.stdout.readline())["detail"]
        assert answers == {"200": MAX_CONNECTIONS_PER_CHILD, "503": FLOOD - MAX_CONNECTIONS_PER_CHILD}
        # the twin: the next child, while the first still holds its 64 tunnels
        result = box.probe("proxy_connect", "allowed.test", str(echo.port), server_network=("allowed.test",), server_name="next")
        assert result["ok"] and str(result["detail"]).endswith("echo:ping\n")
    finally:
        flooder.communicate("", timeout=60)
        finish_launch(launch)


# --- out of descriptors ----------------------------------------------------------------------------


@pytest.fixture
def start_bridge(proxy_dir: Path, echo: Echo) -> Iterator[StartBridge]:
    """Start a proxy in a process of its own (one bridge's); stopped when the test ends."""
    started: list[subprocess.Popen[str]] = []

    def start(open_files: int | None = None) -> tuple[subprocess.Popen[str], Path]:
        args = [sys.executable, str(PROXY_PROCESS), str(proxy_dir), str(echo.port), "allowed.test"]
        proc = subprocess.Popen([*args, *([str(open_files)] if open_files else [])], text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line, proc.communicate(timeout=30)
        return proc, Path(line)

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.communicate("", timeout=30)


def stop(proc: subprocess.Popen[str]) -> str:
    _, err = proc.communicate("", timeout=30)
    assert proc.returncode == 0, err
    return err


def test_a_proxy_out_of_descriptors_ends_connections_not_itself_and_serves_afterwards(start_bridge: StartBridge, echo: Echo) -> None:
    proc, sock = start_bridge(open_files=48)
    held, answers = flood(sock, "allowed.test", echo.port, 200)
    # Tunnels take two descriptors, so the flood may end on a free one (the rest answered 502 when
    # no upstream socket can be made); idle connections take one each and leave none for accept.
    idle = [socket.socket(socket.AF_UNIX) for _ in range(5)]
    try:
        for s in idle:
            s.connect(str(sock))
        probe, last = flood(sock, "allowed.test", echo.port, 1)
        idle += probe
        assert proc.poll() is None, proc.communicate(timeout=30)
        assert 0 < answers.get("200", 0) < 200 and set(answers) <= {"200", "502", "closed"}, answers
        assert last == {"closed": 1}  # ended when accept found no descriptor, not left hanging
    finally:
        release(held + idle)
    # the twin: with the flood gone, the same proxy process tunnels again
    assert tunnel(sock, "allowed.test", echo.port).endswith(b"echo:ping")
    assert 0 < stop(proc).count("out of descriptors") < 10  # said, but not once a connection


# --- two bridges -----------------------------------------------------------------------------------


def test_two_bridges_keep_their_own_sockets_and_one_ending_leaves_the_others(start_bridge: StartBridge, echo: Echo) -> None:
    first, first_sock = start_bridge()
    second, second_sock = start_bridge()
    assert first_sock != second_sock and first_sock.name == second_sock.name  # one list, one folder each
    assert first_sock.parent.name == str(first.pid) and second_sock.parent.name == str(second.pid)
    stop(second)
    assert not second_sock.parent.exists()  # the bridge that ended removed its own folder
    assert tunnel(first_sock, "allowed.test", echo.port).endswith(b"echo:ping")


def test_a_dead_bridges_folder_is_swept_and_a_live_ones_kept(start_bridge: StartBridge, proxy_dir: Path, echo: Echo) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    leftover = proxy_dir / dead.stdout.strip()
    leftover.mkdir()
    (leftover / "p-0000000000000000.sock").touch()
    live, live_sock = start_bridge()
    _, _ = start_bridge()  # a second bridge starts and sweeps
    assert not leftover.exists()
    assert live_sock.exists() and tunnel(live_sock, "allowed.test", echo.port).endswith(b"echo:ping")
