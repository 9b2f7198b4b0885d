"""The sandbox holds END TO END: escape attempts driven through the bridge's own tools.

A real FastMCP fixture (`tests/servers/escape.py`) is registered with `Bridge.add_server` (or as a
developer config server) and its tools are called with `Bridge.call_tool`, so every attempt goes
the whole way a model's call goes: validation, registry, `prepare_launch`, bwrap, MCP session.

Honesty rules (docs: sandbox notes §7.1):
- Fixture trees live under /var/tmp, never /tmp (a private tmpfs inside the sandbox, where a
  stand-in ~/.ssh would simply be absent and every read-deny would pass vacuously).
- Every denial has a positive twin (a write that lands, a file that reads, a listener that
  answers), and denials are checked on the host side too (the file does not exist afterwards).
- `test_sandbox_none_reads_the_ssh_key_and_warns` is the twin proving the denials come from the
  sandbox, not from the fixture layout.

The venv's python lives under /root/.pyenv here; with a fake HOME a root bridge masks /root, so
the children run `visible_python()` (e.g. /usr/bin/python3, same minor version) and the escape
fixture gets the venv's site-packages through its `--site` argument. No test sets PYTHONPATH.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sandbox_box import SECRET, visible_python

from bridge.errors import ErrorResult
from bridge.models import CallResult
from bridge.settings import Settings
from bridge.tools import Bridge, Reply

# tests/helpers.py: tests/ is on sys.path only once a module directly under it was collected.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import fixture_path, pids_with_marker, wait_pids_gone

bwrap = pytest.mark.bwrap

ESCAPE = fixture_path("escape")
FORKING = fixture_path("forking")
SITE = sysconfig.get_paths()["purelib"]  # the venv's site-packages: fastmcp for the escape fixture
BRIDGE_BIN = str(Path(sys.executable).with_name("mcp-bridge"))
NETRC = "machine example.com login me password hunter2\n"


# --- fixtures and helpers -------------------------------------------------------------------------


@dataclass
class World:
    """A fake home, workspace and state dir under /var/tmp (HOME points at the fake home)."""

    root: Path
    home: Path
    ws: Path
    state: Path
    python: str

    def settings(self, **changes: Any) -> Settings:
        values: dict[str, Any] = {
            "workspace": self.ws, "state_dir": self.state, "timeout": 30, "max_chars": 1_000_000,
            "sandbox_network": "deny",
        }
        return Settings(**(values | changes))

    def escape_args(self) -> list[str]:
        return [ESCAPE, "--site", SITE]

    def escape_config(self, **extra: Any) -> dict[str, dict[str, Any]]:
        """A developer-provisioned escape server named `esc` (config may carry `network`, `env`)."""
        return {"esc": {"transport": "stdio", "command": self.python, "args": self.escape_args(), **extra}}

    @contextmanager
    def bridge(self, config_servers: dict[str, dict[str, Any]] | None = None, **settings: Any) -> Iterator[Bridge]:
        """A bridge; without config servers, `esc` is registered through the add_server tool."""
        bridge = Bridge(self.settings(**settings), config_servers or {})
        try:
            if not config_servers:
                added = bridge.add_server("esc", command=self.python, args_json=json.dumps(self.escape_args()))
                assert not added.is_error, added.text
            yield bridge
        finally:
            bridge.close()


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    root = Path(tempfile.mkdtemp(prefix="mcp-e2e-escape-", dir="/var/tmp"))
    home, ws, state = root / "home", root / "ws", root / "state"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(SECRET)
    (home / ".netrc").write_text(NETRC)
    (home / "public.txt").write_text("public\n")
    (ws / ".git" / "hooks").mkdir(parents=True)  # exists before the spawn: protected read-only
    monkeypatch.setenv("HOME", str(home))  # prepare_launch derives the masks from os.environ HOME
    try:
        yield World(root=root, home=home, ws=ws, state=state, python=visible_python())
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A host loopback listener; connects complete in its backlog without accept()."""
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server
    finally:
        server.close()


def call(bridge: Bridge, tool: str, server: str = "esc", **arguments: Any) -> str:
    """Call a tool through the bridge; the call itself must succeed (the attempt is in the text)."""
    reply = bridge.call_tool(server, tool, json.dumps(arguments))
    assert isinstance(reply.data, CallResult), f"{tool} failed through the bridge: {reply.text}"
    return reply.data.text


def reply_dump(reply: Reply) -> str:
    return reply.text + "\n" + reply.data.model_dump_json()


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait on a condition (polled), failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        threading.Event().wait(0.05)


def python_pids(marker: str) -> set[int]:
    """Marker processes that are python itself (the fixture and its grandchild), not bwrap."""
    found = set()
    for pid in pids_with_marker(marker):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue
        if b"bwrap" not in argv0:
            found.add(pid)
    return found


def assert_marker_processes_die(marker: str, seen: set[int], timeout: float = 15.0) -> None:
    """Every process ever seen with the marker, and any still carrying it, exits within `timeout`."""
    try:
        left = wait_pids_gone(seen | pids_with_marker(marker), timeout)
        assert not left, f"survivors with marker {marker}: {sorted(left)}"
        assert not pids_with_marker(marker)
    finally:
        for pid in pids_with_marker(marker):  # never leak what this test started
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


# --- 1, 2: writes ---------------------------------------------------------------------------------


@bwrap
def test_write_inside_workspace_lands_on_host(world: World) -> None:
    target = world.ws / "out.txt"
    with world.bridge() as bridge:
        assert call(bridge, "write", path=str(target), text="from the sandbox") == "ok"
    assert target.read_text() == "from the sandbox"


@bwrap
@pytest.mark.parametrize("where", ["home", "etc", "git-hook"])
def test_write_outside_workspace_is_denied_without_host_side_effect(world: World, where: str) -> None:
    target = {
        "home": world.home / "x",
        "etc": Path("/etc") / f"mcp-e2e-{uuid.uuid4().hex}",
        "git-hook": world.ws / ".git" / "hooks" / "pre-commit",
    }[where]
    try:
        with world.bridge() as bridge:
            outcome = call(bridge, "write", path=str(target), text="#!/bin/sh\necho pwned\n")
        assert outcome.startswith("denied: "), outcome
        assert not target.exists()
    finally:
        if where == "etc":
            target.unlink(missing_ok=True)


# --- 3, 7: reads ----------------------------------------------------------------------------------


@bwrap
def test_home_secrets_are_unreadable_while_a_workspace_file_reads(world: World) -> None:
    (world.ws / "public.txt").write_text("public\n")
    with world.bridge() as bridge:
        public = call(bridge, "read", path=str(world.ws / "public.txt"))
        home_public = call(bridge, "read", path=str(world.home / "public.txt"))
        key = call(bridge, "read", path=str(world.home / ".ssh" / "id_ed25519"))
        netrc = call(bridge, "read", path=str(world.home / ".netrc"))
    assert public == "public\n"  # positive twin: the same read works in the workspace
    assert home_public.startswith("denied: ")  # the real home is not visible at all
    assert key.startswith("denied: ") and SECRET not in key, key
    assert netrc.startswith("denied: ") and "hunter2" not in netrc, netrc


@bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="as non-root, /etc/shadow is unreadable anyway")
def test_etc_shadow_is_unreadable_while_etc_passwd_reads(world: World) -> None:
    with world.bridge() as bridge:
        passwd = call(bridge, "read", path="/etc/passwd")
        shadow = call(bridge, "read", path="/etc/shadow")
    assert "root:" in passwd
    assert shadow.startswith("denied: "), shadow[:200]
    assert Path("/etc/shadow").read_text().split(":", 1)[0] == "root"  # the host file is readable


# --- 4: the registry ------------------------------------------------------------------------------


@bwrap
def test_registry_with_header_secret_is_unreadable_and_never_echoed(world: World) -> None:
    canary = f"CANARY-{uuid.uuid4().hex}"
    registry = world.state / "tool_mcp" / "servers.json"
    replies: list[Reply] = []
    with world.bridge() as bridge:
        replies.append(
            bridge.add_server(
                "remote", url="http://127.0.0.1:9/mcp", headers_json=json.dumps({"Authorization": f"Bearer {canary}"})
            )
        )
        assert not replies[-1].is_error, replies[-1].text
        assert canary in registry.read_text()  # positive: the secret really is in the host file
        replies.append(bridge.list_tools())
        replies.append(bridge.call_tool("esc", "read", json.dumps({"path": str(registry)})))
        replies.append(bridge.call_tool("esc", "proc_environ", "{}"))
    outcome = replies[2].data
    assert isinstance(outcome, CallResult) and outcome.text.startswith("denied: "), replies[2].text
    for reply in replies:
        assert canary not in reply_dump(reply)


# --- 5: network -----------------------------------------------------------------------------------


@bwrap
def test_host_loopback_is_refused_with_network_deny(world: World, listener: socket.socket) -> None:
    host, port = listener.getsockname()
    with world.bridge() as bridge:  # Settings default: sandbox_network="deny"
        assert bridge.settings.sandbox_network == "deny"
        outcome = call(bridge, "connect", host=host, port=port)
    assert outcome.startswith("refused: "), outcome


@bwrap
def test_host_loopback_is_reachable_with_network_allow(world: World, listener: socket.socket) -> None:
    host, port = listener.getsockname()
    with world.bridge(sandbox_network="allow") as bridge:
        assert call(bridge, "connect", host=host, port=port) == "connected"


@bwrap
def test_config_server_network_allow_overrides_global_deny(world: World, listener: socket.socket) -> None:
    host, port = listener.getsockname()
    with world.bridge(world.escape_config(network="allow"), sandbox_network="deny") as bridge:
        assert call(bridge, "connect", host=host, port=port) == "connected"


@bwrap
def test_config_server_network_deny_overrides_global_allow(world: World, listener: socket.socket) -> None:
    host, port = listener.getsockname()
    with world.bridge(world.escape_config(network="deny"), sandbox_network="allow") as bridge:
        outcome = call(bridge, "connect", host=host, port=port)
    assert outcome.startswith("refused: "), outcome


# --- 6: environment -------------------------------------------------------------------------------


@bwrap
def test_bridge_secrets_are_absent_from_env_and_every_visible_environ(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    api_key = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("BRIDGE_CANARY_TOKEN", token)
    monkeypatch.setenv("OPENAI_API_KEY", api_key)
    with world.bridge() as bridge:
        env = json.loads(call(bridge, "env"))
        environ = call(bridge, "proc_environ")
    assert env["HOME"] == str(world.home / ".local/share/mcp-bridge-homes/esc.dynamic") and env["PATH"]
    assert "BRIDGE_CANARY_TOKEN" not in env and "OPENAI_API_KEY" not in env
    assert token not in json.dumps(env) and api_key not in json.dumps(env)
    assert f"HOME={env['HOME']}" in environ  # positive: at least its own environ was read
    assert token not in environ and api_key not in environ


# --- 8: children die with the bridge --------------------------------------------------------------


@bwrap
def test_timeout_kills_child_and_sigterm_ignoring_grandchild(world: World) -> None:
    marker = f"mcp-e2e-marker-{uuid.uuid4().hex}"
    seen: set[int] = set()
    replies: list[Reply] = []
    with world.bridge(timeout=3, start_timeout=3) as bridge:
        added = bridge.add_server("forking", command=world.python, args_json=json.dumps([FORKING, marker]))
        assert not added.is_error, added.text
        worker = threading.Thread(target=lambda: replies.append(bridge.call_tool("forking", "anything", "{}")))
        worker.start()
        try:
            # Positive: the fixture and its SIGTERM-ignoring grandchild really ran.
            wait_for(lambda: len(python_pids(marker)) >= 2, 20, "forking.py and its grandchild")
            seen |= pids_with_marker(marker)
        finally:
            worker.join(30)
        assert not worker.is_alive()
    assert isinstance(replies[0].data, ErrorResult) and replies[0].data.code == "timeout", replies[0].text
    assert_marker_processes_die(marker, seen)


class _JsonRpc:
    """A minimal newline-delimited JSON-RPC client over a subprocess's pipes."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.buffer = b""
        self.next_id = 1

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        request_id, self.next_id = self.next_id, self.next_id + 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def response(self, request_id: int, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    if line.strip():
                        message = json.loads(line)
                        if message.get("id") == request_id and ("result" in message or "error" in message):
                            return message
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no response to request {request_id} within {timeout} s")
                if sel.select(remaining):
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        raise EOFError(f"the bridge closed stdout (exit code {self.proc.poll()})")
                    self.buffer += chunk


@bwrap
def test_killing_the_bridge_kills_child_and_grandchild(world: World) -> None:
    marker = f"mcp-e2e-marker-{uuid.uuid4().hex}"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(world.home),
        "MCP_WORKSPACE": str(world.ws),
        "MCP_STATE_DIR": str(world.state),
        "MCP_TIMEOUT": "300",  # the hanging call must still be running when the bridge dies
    }
    seen: set[int] = set()
    with tempfile.TemporaryFile() as stderr:
        bridge = subprocess.Popen(
            [BRIDGE_BIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=world.ws
        )
        try:
            rpc = _JsonRpc(bridge)
            init = rpc.request(
                "initialize",
                {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}},
            )
            assert "result" in rpc.response(init, 60)
            rpc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            add = rpc.request(
                "tools/call",
                {
                    "name": "mcp_add_server",
                    "arguments": {"name": "forking", "command": world.python, "args_json": json.dumps([FORKING, marker])},
                },
            )
            added = rpc.response(add, 60)
            assert not added["result"].get("isError"), added
            rpc.request(
                "tools/call",
                {"name": "mcp_call_tool", "arguments": {"server": "forking", "tool_name": "anything"}},
            )
            wait_for(lambda: len(python_pids(marker)) >= 2, 30, "forking.py and its grandchild under the bridge")
            seen |= pids_with_marker(marker)
            bridge.kill()  # SIGKILL: no cleanup code in the bridge runs
            bridge.wait(30)
        except BaseException:
            stderr.seek(0)
            print("bridge stderr:\n" + stderr.read()[-4000:].decode(errors="replace"), file=sys.stderr)
            raise
        finally:
            if bridge.poll() is None:
                bridge.kill()
                bridge.wait(30)
            for stream in (bridge.stdin, bridge.stdout):
                if stream is not None:
                    stream.close()
    assert_marker_processes_die(marker, seen)


# --- 9: the sandbox is really in the path ---------------------------------------------------------


def test_sandbox_none_reads_the_ssh_key_and_warns(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """The twin of the home-secret denial: same fixture, same path, no sandbox -> the key reads."""
    caplog.set_level(logging.WARNING, logger="mcp_bridge.sandbox")
    with world.bridge(sandbox="none") as bridge:
        key = call(bridge, "read", path=str(world.home / ".ssh" / "id_ed25519"))
    assert key == SECRET
    warnings = [r for r in caplog.records if r.name == "mcp_bridge.sandbox" and r.levelno == logging.WARNING]
    assert warnings and "WITHOUT a sandbox" in warnings[0].getMessage()
