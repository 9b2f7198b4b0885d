"""Fixtures for the bridge tests: a throwaway workspace and state dir, and Bridges that are always closed.

The workspace and state dir live under /var/tmp, never /tmp: the sandbox gives stdio children a
private /tmp, so a workspace there would not be the one the child sees. A run that writes into the
checkout's own `work/` (a bridge started without `MCP_STATE_DIR`) fails, naming what it wrote.
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bridge_support import BridgeDirs, MakeBridge, StdioArgs
from helpers import fixture_path

from bridge.settings import Settings
from bridge.tools import Bridge


CHECKOUT_STATE = Path(__file__).resolve().parents[1] / "work"


def _state_files() -> dict[str, tuple[int, int]]:
    """Each file under the checkout's work/, with its size and modification time."""
    return {
        str(path.relative_to(CHECKOUT_STATE)): (stat.st_size, stat.st_mtime_ns)
        for path in CHECKOUT_STATE.rglob("*")
        if not path.is_dir() and (stat := path.lstat())
    }


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the run's own process, not an xdist worker
        session.config.stash[_STATE_BEFORE] = _state_files()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_STATE_BEFORE, None)
    if before is None:
        return
    after = _state_files()
    written = sorted(name for name, seen in after.items() if before.get(name) != seen)
    if written:
        session.config.stash[_STATE_WRITTEN] = written
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if written := config.stash.get(_STATE_WRITTEN, None):
        terminalreporter.section("written into the checkout", red=True)
        terminalreporter.line(
            f"the run wrote {', '.join(written)} under {CHECKOUT_STATE}: a test started a bridge without "
            "MCP_STATE_DIR (give it one of its temporary folders)"
        )


_STATE_BEFORE = pytest.StashKey[dict[str, tuple[int, int]]]()
_STATE_WRITTEN = pytest.StashKey[list[str]]()


@pytest.fixture
def bridge_dirs() -> Iterator[BridgeDirs]:
    base = Path(tempfile.mkdtemp(prefix="bridge-test-", dir="/var/tmp")).resolve()
    (base / "ws").mkdir()
    (base / "state").mkdir()
    try:
        yield BridgeDirs(workspace=base / "ws", state=base / "state")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def make_bridge(bridge_dirs: BridgeDirs) -> Iterator[MakeBridge]:
    """`make_bridge(config_servers=None, caller=, served_over_http=, **settings)`: a Bridge on the
    test's dirs, closed at teardown."""
    made: list[Bridge] = []

    def make(
        config_servers: dict[str, dict[str, Any]] | None = None,
        *,
        caller: str = "host",
        served_over_http: bool = False,
        **settings: Any,
    ) -> Bridge:
        settings.setdefault("timeout", 30)
        made.append(
            Bridge(
                Settings(workspace=bridge_dirs.workspace, state_dir=bridge_dirs.state, homes_dir=bridge_dirs.homes, **settings),
                config_servers or {},
                caller=caller,
                served_over_http=served_over_http,
            )
        )
        return made[-1]

    try:
        yield make
    finally:
        for made_bridge in made:
            made_bridge.close()


@pytest.fixture
def bridge(make_bridge: MakeBridge) -> Bridge:
    return make_bridge()


@pytest.fixture
def marker() -> str:
    """A unique argument that makes a child findable in /proc with `pids_with_marker`."""
    return f"bridge-test-marker-{uuid.uuid4().hex}"


def _stdio_args(fixture: str, *extra: str) -> str:
    return json.dumps([fixture_path(fixture), *extra])


@pytest.fixture
def stdio_args() -> StdioArgs:
    """`stdio_args("echo", marker)`: the args_json that runs a fixture server with sys.executable."""
    return _stdio_args


@pytest.fixture
def untouched() -> Iterator[socket.socket]:
    """A loopback listener that nothing may connect to: the test fails if a connection is waiting
    at the end (a refused target must be refused before any socket is opened)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock
        with pytest.raises(BlockingIOError):
            sock.accept()
