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


@bwrap
def test_a_tls_inspecting_network_s_ca_bundle_reaches_the_child_even_from_the_hidden_home(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind TLS inspection npx and uvx need the inspecting CA: SSL_CERT_FILE and NODE_EXTRA_CA_CERTS
    pass on, and the file they name is shown read-only while the rest of the home stays hidden."""
    bundle = world.home / "certs" / "corporate.pem"
    bundle.parent.mkdir()
    bundle.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", str(bundle))
    monkeypatch.setenv("SSL_CERT_DIR", "/etc/ssl/certs")
    with world.bridge() as bridge:
        env = json.loads(call(bridge, "env"))
        read = call(bridge, "read", path=str(bundle))
        public = call(bridge, "read", path=str(world.home / "public.txt"))
        key = call(bridge, "read", path=str(world.home / ".ssh" / "id_ed25519"))
    assert env["SSL_CERT_FILE"] == env["NODE_EXTRA_CA_CERTS"] == str(bundle)
    assert env["SSL_CERT_DIR"] == "/etc/ssl/certs"
    assert read == "-----BEGIN CERTIFICATE-----\n"
    assert public.startswith("denied: ") and key.startswith("denied: ")  # the twin: the home stays hidden


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


# --- 10: the servers people configure start, from an empty private home -------------------------

NPX = shutil.which("npx")
UVX = shutil.which("uvx") or str(Path(sys.executable).with_name("uvx"))


def home_of(world: World, server: str) -> Path:
    return world.home / ".local/share/mcp-bridge-homes" / f"{server}.dynamic"


def sandbox_said(reply: Reply, code: str = "child_exited") -> str:
    """The sandbox's note on a failure: in the detail, and as a sentence of the message."""
    assert isinstance(reply.data, ErrorResult) and reply.data.code == code, reply.text
    note: str = reply.data.detail["sandbox"]
    assert note[0].upper() + note[1:] in reply.text
    return note


@bwrap
@pytest.mark.registry
@pytest.mark.skipif(NPX is None, reason="npx is not installed")
def test_npx_server_starts_through_the_bridge_with_default_settings_from_an_empty_home(world: World) -> None:
    with world.bridge() as bridge:
        assert bridge.settings.sandbox_network == "deny" and bridge.settings.start_timeout == 180
        added = bridge.add_server("everything", command=NPX, args_json='["-y", "@modelcontextprotocol/server-everything"]')
        assert not added.is_error, added.text
        assert not home_of(world, "everything").exists()  # nothing cached before the first start
        listed = bridge.list_tools("everything")
        assert not listed.is_error, listed.text
        assert "echo" in {tool.name for tool in listed.data.tools}  # type: ignore[attr-defined]
        echoed = call(bridge, "echo", server="everything", message="through the proxy")
    assert "through the proxy" in echoed
    assert (home_of(world, "everything") / ".npm").is_dir()  # the download went to the private home


@bwrap
@pytest.mark.registry
@pytest.mark.skipif(not Path(UVX).exists(), reason="uvx is not installed")
def test_uvx_server_starts_through_the_bridge_with_default_settings_from_an_empty_home(world: World) -> None:
    with world.bridge() as bridge:
        added = bridge.add_server("time", command=UVX, args_json='["mcp-server-time"]')
        assert not added.is_error, added.text
        listed = bridge.list_tools("time")
        assert not listed.is_error, listed.text
        assert "get_current_time" in {tool.name for tool in listed.data.tools}  # type: ignore[attr-defined]
    assert (home_of(world, "time") / ".cache" / "uv").is_dir()


@bwrap
def test_a_registry_only_child_is_refused_a_non_registry_name_by_the_proxy_and_told_so(world: World) -> None:
    """The proxy refuses by name, before any lookup: nothing leaves the machine."""
    fetch = "import urllib.request; urllib.request.urlopen('https://evil.example.com/', timeout=20)"
    servers = {"fetcher": {"transport": "stdio", "command": world.python, "args": ["-c", fetch], "network": "registry"}}
    with world.bridge(servers) as bridge:
        failed = bridge.list_tools("fetcher")
    note = sandbox_said(failed)
    assert note.startswith("network denied by the sandbox (it tried evil.example.com)")
    assert "registry.npmjs.org" in note and "`network` domain list" in note


@bwrap
def test_a_child_without_network_that_fails_to_resolve_is_told_which_setting_opens_it(world: World) -> None:
    resolve = "import socket; socket.getaddrinfo('registry.npmjs.org', 443)"
    with world.bridge({"resolver": {"transport": "stdio", "command": world.python, "args": ["-c", resolve]}}) as bridge:
        failed = bridge.list_tools("resolver")
    note = sandbox_said(failed)
    assert note.startswith("network denied by the sandbox") and "MCP_SANDBOX_NETWORK" in note


@bwrap
def test_a_child_failing_for_its_own_reason_gets_no_sandbox_note(world: World) -> None:
    """Positive twin of the notes: a plain crash is only a crash."""
    with world.bridge({"crash": {"transport": "stdio", "command": world.python, "args": ["-c", "raise SystemExit('bad config')"]}}) as bridge:
        failed = bridge.list_tools("crash")
    assert isinstance(failed.data, ErrorResult) and failed.data.code == "child_exited", failed.text
    assert "bad config" in failed.text and "sandbox" not in failed.text and "sandbox" not in failed.data.detail


# --- 11: limits, paths and unrunnable commands say what they are ---------------------------------


def inline(world: World, bridge: Bridge, name: str, script: str) -> Reply:
    added = bridge.add_server(name, command=world.python, args_json=json.dumps(["-c", script]))
    assert not added.is_error, added.text
    return bridge.list_tools(name)


@bwrap
@pytest.mark.parametrize(
    ("limit", "script", "settings", "says"),
    [
        ("memory", "bytearray(512 << 20); raise SystemExit(3)", {"child_memory_mb": 256},
         "limit hit: memory (the sandbox's per-child limit of 256 MiB); raise MCP_CHILD_MEMORY_MB"),
        ("file size", "open('big', 'wb').write(b'x' * (3 << 20)); raise SystemExit(3)", {"child_file_mb": 1},
         "limit hit: file size (the sandbox's per-child limit of 1 MiB); raise MCP_CHILD_FILE_MB"),
    ],
    ids=["memory", "file-size"],
)  # fmt: skip
def test_a_child_over_a_limit_is_told_which_limit_and_its_twin_under_it_is_not(
    world: World, limit: str, script: str, settings: dict[str, int], says: str
) -> None:
    with world.bridge({}, **settings) as bridge:
        over = inline(world, bridge, "over", script)
    with world.bridge({}) as bridge:  # the defaults: 2 GiB, 1 GiB
        under = inline(world, bridge, "under", script)
    assert sandbox_said(over) == says
    assert isinstance(under.data, ErrorResult) and under.data.detail["exit_code"] == 3, under.text
    assert "limit hit" not in under.text


@bwrap
def test_a_refused_write_to_a_trusted_config_path_names_the_path(world: World) -> None:
    (world.ws / ".vscode").mkdir()
    target = world.ws / ".vscode" / "tasks.json"
    with world.bridge({}) as bridge:
        refused = inline(world, bridge, "vscode", f"open({str(target)!r}, 'w')")
        written = inline(world, bridge, "notes", f"open({str(world.ws / 'notes.txt')!r}, 'w'); raise SystemExit(3)")
    assert sandbox_said(refused).startswith(
        f"{target} is read-only in the sandbox ({world.ws / '.vscode'} is a config path the host trusts)"
    )
    assert not target.exists()
    assert isinstance(written.data, ErrorResult) and "sandbox" not in written.data.detail  # the twin wrote and exited
    assert (world.ws / "notes.txt").exists()


@bwrap
def test_a_file_in_the_hidden_home_is_named_with_read_paths_and_reads_when_listed(world: World) -> None:
    notes = world.home / "notes.txt"
    notes.write_text("visible\n")
    script = f"print(open({str(notes)!r}).read(), file=__import__('sys').stderr); raise SystemExit(3)"
    with world.bridge({}) as bridge:
        hidden = inline(world, bridge, "hidden", script)
    listed = {"reader": {"transport": "stdio", "command": world.python, "args": ["-c", script], "read_paths": [str(notes)]}}
    with world.bridge(listed) as bridge:
        read = bridge.list_tools("reader")
    assert sandbox_said(hidden) == f"{notes} is hidden by the sandbox (inside {world.home}); add it to the server's read_paths"
    assert isinstance(read.data, ErrorResult) and read.data.detail["stderr_tail"] == ["visible"], read.text


MASKED_PYTHON = os.path.realpath(sys.executable)  # under /root here: masked when HOME is not /root


def add_script(bridge: Bridge, path: Path, text: str) -> Reply:
    path.write_text(text)
    path.chmod(0o755)
    return bridge.add_server(path.stem, command=str(path))


@bwrap
def test_a_script_without_a_shebang_is_refused_at_add_time_and_its_twin_with_one_is_added(world: World) -> None:
    with world.bridge({}) as bridge:
        refused = add_script(bridge, world.ws / "bare.py", "print('hi')\n")
        added = add_script(bridge, world.ws / "shebang.py", f"#!{world.python}\nprint('hi')\n")
        assert "bare" not in bridge.registry.dynamic()
    assert isinstance(refused.data, ErrorResult) and refused.data.code == "spawn_failed", refused.text
    assert refused.data.retryable is False and "nor a script with a #! line" in refused.text
    assert not added.is_error, added.text


@bwrap
@pytest.mark.skipif(
    os.geteuid() != 0 or not MASKED_PYTHON.startswith("/root/"), reason="needs a root bridge whose python lies under /root"
)
def test_an_interpreter_in_a_masked_folder_is_refused_at_add_time_naming_read_paths(world: World) -> None:
    """The issue's venv case: pyenv under /root, the bridge run as root with another HOME."""
    with world.bridge({}) as bridge:
        refused = add_script(bridge, world.ws / "masked.py", f"#!{MASKED_PYTHON}\nprint('hi')\n")
    assert isinstance(refused.data, ErrorResult) and refused.data.code == "spawn_failed", refused.text
    assert refused.data.retryable is False
    assert f"{MASKED_PYTHON} (needed to run" in refused.text and "add its folder to the server's read_paths" in refused.text


# --- 12: starts have their own timeout; text on stdout fails fast --------------------------------


@bwrap
def test_a_start_slower_than_mcp_timeout_succeeds_within_mcp_start_timeout(world: World) -> None:
    slow = f"import time, runpy, sys; time.sleep(3); sys.argv = [{ESCAPE!r}, '--site', {SITE!r}]; runpy.run_path({ESCAPE!r}, run_name='__main__')"
    with world.bridge({}, timeout=1, start_timeout=60) as bridge:
        started = inline(world, bridge, "slow", slow)
    assert not started.is_error, started.text


@bwrap
def test_a_start_over_mcp_start_timeout_names_it(world: World) -> None:
    with world.bridge({}, timeout=600, start_timeout=2) as bridge:
        hung = inline(world, bridge, "hung", "import time; time.sleep(600)")
    assert isinstance(hung.data, ErrorResult) and hung.data.code == "timeout", hung.text
    assert "did not start within 2 s (MCP_START_TIMEOUT)" in hung.text


@bwrap
@pytest.mark.timeout(90)  # MCP_TIMEOUT and MCP_START_TIMEOUT are 600 s: only the fast path ends it
def test_a_child_printing_only_text_fails_after_two_seconds_with_the_text_quoted(world: World) -> None:
    hostile = str(Path(ESCAPE).with_name("hostile_stdio.py"))
    with world.bridge({}, timeout=600, start_timeout=600) as bridge:
        added = bridge.add_server("text", command=world.python, args_json=json.dumps([hostile, "not-json"]))
        assert not added.is_error, added.text
        failed = bridge.list_tools("text")
    assert isinstance(failed.data, ErrorResult) and failed.data.code == "protocol_error", failed.text
    assert "'Welcome to not-json 1.0, an interactive shell.'" in failed.text
    assert "nothing else for 2 s" in failed.text and failed.data.retryable is False


@bwrap
@pytest.mark.timeout(90)
def test_a_child_printing_text_then_exiting_fails_at_once_with_the_text_quoted(world: World) -> None:
    with world.bridge({}, timeout=600, start_timeout=600) as bridge:
        failed = inline(world, bridge, "banner", "print('usage: server [--stdio]')")
    assert isinstance(failed.data, ErrorResult) and failed.data.code == "protocol_error", failed.text
    assert "'usage: server [--stdio]'" in failed.text and "exited with code 0" in failed.text


# --- 13: a private home lives as long as its entry; a git init below is reported ---------------


@bwrap
def test_removing_a_server_removes_its_private_home_and_a_new_command_gets_a_fresh_one(world: World) -> None:
    keep = "open(__import__('os').environ['HOME'] + '/kept', 'w'); raise SystemExit(3)"
    with world.bridge({}) as bridge:
        inline(world, bridge, "h", keep)
        assert (home_of(world, "h") / "kept").exists()
        inline(world, bridge, "h", keep)  # re-added with the same command line: its caches stay
        assert (home_of(world, "h") / "kept").exists()
        added = bridge.add_server("h", command=world.python, args_json='["-c", "raise SystemExit(3)"]')
        assert not added.is_error and not home_of(world, "h").exists()  # another program: a fresh home
        inline(world, bridge, "h", keep)
        assert not bridge.remove_server("h").is_error
    assert not home_of(world, "h").exists()


@bwrap
def test_a_git_init_below_the_workspace_is_reported_in_the_audit_log(world: World, caplog: pytest.LogCaptureFixture) -> None:
    from bridge.tools.audit import read_entries

    script = "import subprocess; subprocess.run(['git', 'init', '-q', 'sub'], check=True); raise SystemExit(3)"
    with world.bridge({}) as bridge:
        inline(world, bridge, "gitter", script)
        bridge.audit.flush()
    assert (world.ws / "sub" / ".git").is_dir()  # not prevented: mounts cannot stop it
    reported = [e for e in read_entries(world.state / "audit") if e["outcome"] == "new_git_repository"]
    assert [(e["server"], e["path"]) for e in reported] == [("gitter", str(world.ws / "sub" / ".git"))]
    assert any("created git repositories" in r.getMessage() for r in caplog.records)


@bwrap
def test_a_session_that_creates_no_repository_reports_none(world: World) -> None:
    from bridge.tools.audit import read_entries

    with world.bridge({}) as bridge:
        inline(world, bridge, "quiet", f"open({str(world.ws / 'plain.txt')!r}, 'w'); raise SystemExit(3)")
        bridge.audit.flush()
    assert not [e for e in read_entries(world.state / "audit") if e["outcome"] == "new_git_repository"]
