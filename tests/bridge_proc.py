"""Drive a real `mcp-bridge` process the way a host does, byte for byte: raw JSON-RPC over stdio or
Streamable HTTP, so tests see exactly what goes over the wire (no client library reshaping it).

Start-up waits on the bridge's own "serving Streamable HTTP at URL" line, read by a thread that keeps
every stderr line, so a test can also check what the bridge logged.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
BRIDGE = str(Path(sys.executable).with_name("mcp-bridge"))
NODE_MODULES = ROOT / "tests/node/node_modules"
EVERYTHING = NODE_MODULES / "@modelcontextprotocol/server-everything/dist/index.js"
FOUR_TOOLS = ["mcp_list_tools", "mcp_call_tool", "mcp_add_server", "mcp_remove_server"]
MODERN = "2026-07-28"
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def workdirs() -> Iterator[dict[str, str]]:
    """Workspace and state dir under /var/tmp: the sandbox gives children a private /tmp."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="bridge-host-"))
    (base / "ws").mkdir()
    try:
        yield {"MCP_WORKSPACE": str(base / "ws"), "MCP_STATE_DIR": str(base / "state"), "MCP_HOMES_DIR": str(base / "homes")}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def host_env(dirs: dict[str, str], **extra: str) -> dict[str, str]:
    """What a host typically passes: PATH, HOME and the bridge's own settings, nothing else."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), **dirs, **extra}


def modern_meta(client_name: str = "test-host") -> dict[str, Any]:
    """The per-request envelope of the 2026-07-28 era."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": client_name, "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def initialize_params(version: str, client_name: str = "test-host") -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": client_name, "version": "1.0.0"}}


def post_initialize(url: str, **headers: str) -> httpx.Response:
    """One raw handshake-era `initialize` POST, as ChatGPT sends it, with `headers` on top."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params("2025-06-18", "openai-mcp")}
    return httpx.post(url, json=body, headers={**ACCEPT, **headers}, follow_redirects=False, trust_env=False, timeout=30)


class StdioPeer:
    """Newline-delimited JSON-RPC to a bridge process; answers are matched by id, and the
    notifications read on the way are kept in order."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self._next_id = 0
        self.notifications: list[dict[str, Any]] = []

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}})
        while True:
            line = self.proc.stdout.readline()  # type: ignore[union-attr]
            assert line, f"the bridge closed stdout before answering {method}"
            message = json.loads(line)
            if message.get("id") == self._next_id:
                return message
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        answer = self.request(method, params)
        assert "result" in answer, answer
        return answer["result"]

    def send(self, message: dict[str, Any]) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def handshake(self, version: str = "2025-11-25", client_name: str = "test-host") -> dict[str, Any]:
        result = self.result("initialize", initialize_params(version, client_name))
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result


@contextmanager
def stdio_bridge(env: dict[str, str]) -> Iterator[StdioPeer]:
    proc = subprocess.Popen(
        [BRIDGE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        # As a host starts it: a test suite run as a background job inherits SIGINT ignored, and
        # Python then never turns Ctrl-C into KeyboardInterrupt.
        preexec_fn=_default_sigint,
    )
    try:
        yield StdioPeer(proc)
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]


@dataclass
class HttpBridge:
    """A running `mcp-bridge --transport http`: its URL and every line it wrote to stderr."""

    url: str
    proc: subprocess.Popen[str]
    stderr_lines: list[str] = field(default_factory=list)
    new_line: threading.Condition = field(default_factory=threading.Condition)

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def wait_for_line(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """The first stderr line matching `pattern`, waiting (on the reader's notification) until it comes."""
        def found() -> re.Match[str] | None:
            return next((m for line in self.stderr_lines if (m := re.search(pattern, line))), None)

        with self.new_line:
            match = self.new_line.wait_for(found, timeout=timeout)
        assert match, f"no stderr line matches {pattern!r}:\n{self.stderr}"
        return match


@contextmanager
def http_bridge(env: dict[str, str], *args: str, command: list[str] | None = None) -> Iterator[HttpBridge]:
    """Start `mcp-bridge --transport http --port 0 ARGS` (or `command`, a launcher around it) and
    yield once it says where it serves."""
    proc = subprocess.Popen(
        command or [BRIDGE, "--transport", "http", "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    lines: list[str] = []
    found: list[str] = []
    ready = threading.Event()
    new_line = threading.Condition()

    def read_stderr() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            with new_line:
                lines.append(line)
                new_line.notify_all()
            match = re.search(r"serving Streamable HTTP at (http://\S+/mcp)", line)
            if match:
                found.append(match.group(1))
                ready.set()
        ready.set()  # the bridge exited: wake the waiter either way
        with new_line:
            new_line.notify_all()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        ready.wait(timeout=60)
        assert found, f"the bridge did not serve (exit code {proc.poll()}):\n{''.join(lines)}"
        bridge = HttpBridge(found[0], proc, lines, new_line)
        yield bridge
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        reader.join(timeout=30)


def sse_message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a Streamable HTTP answer, whether sent as JSON or as one SSE event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[len("data:") :].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])
    return response.json()


class HttpPeer:
    """Raw Streamable HTTP requests, in either era, with the headers a host would add."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.client = httpx.Client(headers={**ACCEPT, **(headers or {})}, timeout=60, follow_redirects=False)
        self.session_id: str | None = None
        self.version: str | None = None
        self._next_id = 0

    def post(self, message: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
        sent = dict(headers or {})
        if self.session_id:
            sent["mcp-session-id"] = self.session_id
        if self.version:
            sent["mcp-protocol-version"] = self.version
        if self.version == MODERN and "method" in message:
            sent["mcp-method"] = message["method"]
        return self.client.post(self.url, json=message, headers=sent)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        response = self.post({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}})
        assert response.status_code == 200, (response.status_code, response.text)
        answer = sse_message(response)
        assert "result" in answer, answer
        return answer["result"]

    def handshake(self, version: str = "2025-11-25", client_name: str = "test-host") -> dict[str, Any]:
        """`initialize`, keep the session id it issues, then `notifications/initialized`."""
        self._next_id += 1
        response = self.post(
            {"jsonrpc": "2.0", "id": self._next_id, "method": "initialize", "params": initialize_params(version, client_name)}
        )
        assert response.status_code == 200, (response.status_code, response.text)
        self.session_id = response.headers["mcp-session-id"]
        self.version = version
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
        return sse_message(response)["result"]

    def speak_modern(self) -> None:
        """From now on every request carries the 2026-07-28 headers (its `_meta` is up to the caller)."""
        self.session_id = None
        self.version = MODERN

    def close(self) -> None:
        self.client.close()


@contextmanager
def http_peer(url: str, headers: dict[str, str] | None = None) -> Iterator[HttpPeer]:
    peer = HttpPeer(url, headers)
    try:
        yield peer
    finally:
        peer.close()
