"""Fixtures for the OAuth tests: served bridges that are always stopped, the owner, a CIMD host."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from oauth_support import DocumentServer, Owner, ServedBridge, make_loopback_tls  # noqa: E402

Serve = Callable[..., ServedBridge]


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


@pytest.fixture
def serve(state_dir: Path) -> Iterator[Serve]:
    """`serve(**settings)`: a started bridge on the test's state dir, stopped at teardown."""
    started: list[ServedBridge] = []

    def start(**overrides: Any) -> ServedBridge:
        served = ServedBridge(state_dir, **overrides)
        served.start()
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()


@pytest.fixture
def owner(state_dir: Path) -> Owner:
    return Owner(state_dir)


@pytest.fixture
def loopback_tls(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(ca, cert, key) for an HTTPS server on 127.0.0.1."""
    directory = tmp_path / "tls"
    directory.mkdir()
    return make_loopback_tls(directory)


@pytest.fixture
def cimd_host(loopback_tls: tuple[Path, Path, Path]) -> Iterator[DocumentServer]:
    server = DocumentServer(loopback_tls[1], loopback_tls[2])
    yield server
    server.close()
