"""The registry file under real concurrency and real crashes, with separate writer processes.

test_registry.py pins the file discipline inside one process; here the other writers are OS
processes (tests/store/registry_worker.py), some through the Bridge's sync tool faces as a host
calls them: many writers at once lose no update and never show a reader torn JSON, a writer killed
with SIGKILL inside its write leaves the old registry or the new one and no temp file for long, a
corrupt file keeps listing alive while writes refuse to touch it, and a lock held elsewhere ends in
a retryable error, not a hang.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from bridge_support import BridgeDirs, MakeBridge

import bridge.store.registry as registry_module
from bridge.errors import ErrorResult
from bridge.models import HttpServerSpec
from bridge.store.registry import Registry

WORKER = str(Path(__file__).with_name("registry_worker.py"))
WRITERS = 8  # half through Bridge.add_server/remove_server, half through Registry
WRITES_EACH = 50
SHORT_LOCK_TIMEOUT_S = 0.5
WORKER_DEADLINE_S = 60  # far above a normal run: only a stuck worker meets it
SEED = HttpServerSpec(url="https://seed.example/mcp")


def registry_on(dirs: BridgeDirs) -> Registry:
    return Registry(path=dirs.registry, legacy_path=dirs.legacy_registry, config_servers={})


def temp_files(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


def spawn(mode: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WORKER, mode, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def expect_line(proc: subprocess.Popen[str], wanted: str) -> None:
    """Block until the worker says `wanted`; a worker that exits instead fails the test with its stderr."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != wanted:
        proc.kill()
        _, stderr = proc.communicate()
        pytest.fail(f"worker said {line!r} instead of {wanted!r}; stderr:\n{stderr}")


@pytest.fixture
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    """Worker processes started by a test; any still running at teardown are killed and reaped."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# -- many writers, one reader ----------------------------------------------------------------


@dataclass
class ReadCounts:
    reads: int = 0
    torn: int = 0
    missing: int = 0
    versions: int = 0


def read_until(path: Path, stop: threading.Event, counts: ReadCounts) -> None:
    """Read and parse the file as fast as possible; anything but a whole registry counts as torn."""
    last = b""
    while not stop.is_set():
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            counts.missing += 1
            continue
        counts.reads += 1
        try:
            parsed = json.loads(data)
        except ValueError:
            counts.torn += 1
            continue
        if not (isinstance(parsed, dict) and isinstance(parsed.get("servers"), dict)):
            counts.torn += 1
        if data != last:
            counts.versions += 1
            last = data


def test_concurrent_writers_lose_no_update_and_a_reader_never_sees_torn_json(
    bridge_dirs: BridgeDirs, workers: list[subprocess.Popen[str]]
) -> None:
    registry_on(bridge_dirs).add("seed", SEED)  # nobody touches it: it must survive every rewrite
    for index in range(WRITERS):
        face = "bridge" if index % 2 == 0 else "registry"
        workers.append(
            spawn("stress", face, str(index), str(WRITES_EACH), str(bridge_dirs.state), str(bridge_dirs.workspace))
        )
    for proc in workers:
        expect_line(proc, "READY")

    counts, stop = ReadCounts(), threading.Event()
    reader = threading.Thread(target=read_until, args=(bridge_dirs.registry, stop, counts))
    reader.start()
    try:
        for proc in workers:  # all are waiting: GO releases them at once
            assert proc.stdin is not None
            proc.stdin.write("GO\n")
            proc.stdin.flush()
        started, outcomes = time.monotonic(), []
        for proc in workers:
            stdout, stderr = proc.communicate(timeout=WORKER_DEADLINE_S)
            assert proc.returncode == 0, stderr
            outcomes.append(json.loads(stdout.splitlines()[-1]))
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        reader.join()

    expected = {"seed": SEED.url}
    for outcome in outcomes:
        expected.update(outcome["mine"])
    final = json.loads(bridge_dirs.registry.read_text())["servers"]
    assert {name: entry["url"] for name, entry in final.items()} == expected
    assert (counts.torn, counts.missing) == (0, 0)
    assert counts.versions > 10, "the reader must have read while the writers wrote"
    assert stat.S_IMODE(bridge_dirs.registry.stat().st_mode) == 0o600
    assert temp_files(bridge_dirs.registry.parent) == []
    print(
        f"\n{WRITERS} writer processes, {WRITERS * WRITES_EACH} writes in {elapsed:.2f} s "
        f"(slowest {max(outcome['slowest'] for outcome in outcomes):.3f} s, "
        f"{sum(outcome['retries'] for outcome in outcomes)} lock timeouts retried), {counts.reads} reads "
        f"({counts.versions} distinct versions seen), {counts.torn} torn, {counts.missing} missing"
    )


# -- a writer killed inside its write --------------------------------------------------------


@pytest.fixture
def short_lock_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock a dead writer still held would make the next write fail in 0.5 s, not hang."""
    monkeypatch.setattr(registry_module, "LOCK_TIMEOUT_S", SHORT_LOCK_TIMEOUT_S)


def kill_inside_write(when: str, dirs: BridgeDirs, workers: list[subprocess.Popen[str]]) -> list[str]:
    """SIGKILL a writer adding `new` at `when` in its write; return the temp files it left."""
    proc = spawn(when, "new", str(dirs.state), str(dirs.workspace))
    workers.append(proc)
    expect_line(proc, "WINDOW")
    left = temp_files(dirs.registry.parent)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    return left


def test_a_writer_killed_before_the_replace_leaves_exactly_the_old_registry(
    bridge_dirs: BridgeDirs, workers: list[subprocess.Popen[str]]
) -> None:
    registry = registry_on(bridge_dirs)
    registry.add("old", SEED)
    before = bridge_dirs.registry.read_bytes()

    [left] = kill_inside_write("kill-before", bridge_dirs, workers)

    assert bridge_dirs.registry.read_bytes() == before
    # The window was real: the complete new registry sat in a temp file when the writer died.
    assert set(json.loads((bridge_dirs.registry.parent / left).read_text())["servers"]) == {"old", "new"}


@pytest.mark.usefixtures("short_lock_timeout")
def test_the_next_write_after_a_killed_writer_succeeds_and_removes_its_temp_file(
    bridge_dirs: BridgeDirs, workers: list[subprocess.Popen[str]], caplog: pytest.LogCaptureFixture
) -> None:
    registry = registry_on(bridge_dirs)
    registry.add("old", SEED)
    [left] = kill_inside_write("kill-before", bridge_dirs, workers)

    with caplog.at_level(logging.WARNING, logger="mcp_bridge.registry"):
        assert registry.add("later", SEED) is False  # the lock died with its holder
    assert set(registry.dynamic()) == {"old", "later"}
    assert temp_files(bridge_dirs.registry.parent) == []
    assert any(left in record.getMessage() for record in caplog.records)


@pytest.mark.usefixtures("short_lock_timeout")
def test_a_writer_killed_after_the_replace_leaves_the_whole_new_registry(
    bridge_dirs: BridgeDirs, workers: list[subprocess.Popen[str]]
) -> None:
    registry = registry_on(bridge_dirs)
    registry.add("old", SEED)

    assert kill_inside_write("kill-after", bridge_dirs, workers) == []

    assert set(json.loads(bridge_dirs.registry.read_text())["servers"]) == {"old", "new"}
    assert stat.S_IMODE(bridge_dirs.registry.stat().st_mode) == 0o600
    assert registry.add("later", SEED) is False
    assert set(registry.dynamic()) == {"old", "new", "later"}


def test_a_write_cleans_only_its_own_registrys_temp_files(bridge_dirs: BridgeDirs) -> None:
    directory = bridge_dirs.registry.parent
    directory.mkdir(parents=True)
    foreign = [".other.json.abcd1234.tmp", "notes.tmp", ".servers.json.tmp.keep"]
    for name in [*foreign, ".servers.json.abcd1234.tmp"]:
        (directory / name).write_text("{}")

    registry_on(bridge_dirs).add("alpha", SEED)

    assert sorted(os.listdir(directory)) == sorted([*foreign, "servers.json", "servers.json.lock"])


def test_a_write_the_file_system_refuses_halfway_is_a_registry_error_and_changes_nothing(
    bridge_dirs: BridgeDirs, workers: list[subprocess.Popen[str]]
) -> None:
    registry_on(bridge_dirs).add("old", SEED)
    before = bridge_dirs.registry.read_bytes()
    proc = spawn("fsize", "big", str(bridge_dirs.state), str(bridge_dirs.workspace))
    workers.append(proc)
    stdout, stderr = proc.communicate(timeout=WORKER_DEADLINE_S)
    assert proc.returncode == 0, stderr

    outcome = json.loads(stdout)
    assert (outcome["code"], outcome["retryable"]) == ("registry_error", False)
    assert "File too large" in outcome["message"]
    assert bridge_dirs.registry.read_bytes() == before
    assert temp_files(bridge_dirs.registry.parent) == []


# -- a corrupt registry, through the tools ---------------------------------------------------

CONFIG = {"cfg": {"transport": "http", "url": "https://config.example/mcp"}}
CORRUPT = b'{"servers": {"precious": {"transport": "http", "url": "https://prec'


@pytest.fixture
def corrupt(bridge_dirs: BridgeDirs) -> bytes:
    bridge_dirs.registry.parent.mkdir(parents=True)
    bridge_dirs.registry.write_bytes(CORRUPT)
    return CORRUPT


def test_a_corrupt_registry_still_lists_the_config_servers(
    corrupt: bytes, bridge_dirs: BridgeDirs, make_bridge: MakeBridge
) -> None:
    reply = make_bridge(CONFIG).list_tools()
    assert not reply.is_error, reply.text
    assert [server.name for server in reply.data.servers] == ["cfg"]
    assert bridge_dirs.registry.read_bytes() == corrupt


def test_a_corrupt_registry_comes_with_a_warning_for_whoever_lists_it(corrupt: bytes, bridge_dirs: BridgeDirs) -> None:
    servers, warning = registry_on(bridge_dirs).listing()
    assert servers == {}
    assert warning is not None
    assert str(bridge_dirs.registry) in warning and "not valid JSON" in warning


def test_a_readable_registry_lists_without_a_warning(bridge_dirs: BridgeDirs) -> None:
    registry = registry_on(bridge_dirs)
    registry.add("alpha", SEED)
    servers, warning = registry.listing()
    assert list(servers) == ["alpha"]
    assert warning is None


@pytest.mark.parametrize("action", ["add", "remove"])
def test_add_and_remove_refuse_a_corrupt_registry_and_leave_its_bytes(
    corrupt: bytes, bridge_dirs: BridgeDirs, make_bridge: MakeBridge, action: str
) -> None:
    bridge = make_bridge(CONFIG)
    reply = bridge.add_server("alpha", url="https://a.example/mcp") if action == "add" else bridge.remove_server("precious")

    assert isinstance(reply.data, ErrorResult)
    assert (reply.data.code, reply.data.retryable) == ("registry_error", False)
    assert "Fix or delete it by hand" in reply.text
    assert bridge_dirs.registry.read_bytes() == corrupt
    assert temp_files(bridge_dirs.registry.parent) == []


def test_once_the_corrupt_registry_is_deleted_add_works_again(
    corrupt: bytes, bridge_dirs: BridgeDirs, make_bridge: MakeBridge
) -> None:
    bridge = make_bridge(CONFIG)
    assert bridge.add_server("alpha", url="https://a.example/mcp").is_error
    bridge_dirs.registry.unlink()
    reply = bridge.add_server("alpha", url="https://a.example/mcp")
    assert not reply.is_error, reply.text
    assert [server.name for server in bridge.list_tools().data.servers] == ["alpha", "cfg"]


def test_a_state_dir_that_cannot_hold_the_registry_gives_registry_error_not_a_crash(
    bridge_dirs: BridgeDirs, make_bridge: MakeBridge
) -> None:
    bridge_dirs.registry.parent.write_text("a file where the registry's directory should be")
    bridge = make_bridge(CONFIG)  # starts anyway: listing must not depend on the registry
    assert [server.name for server in bridge.list_tools().data.servers] == ["cfg"]

    reply = bridge.add_server("alpha", url="https://a.example/mcp")
    assert isinstance(reply.data, ErrorResult)
    assert (reply.data.code, reply.data.retryable) == ("registry_error", False)


# -- a lock held by another process ----------------------------------------------------------


@pytest.fixture
def lock_holder(bridge_dirs: BridgeDirs, workers: list[subprocess.Popen[str]]) -> subprocess.Popen[str]:
    """Another process holding the registry's lock (the registry file exists, holding `seed`)."""
    registry_on(bridge_dirs).add("seed", SEED)
    proc = spawn("hold", str(bridge_dirs.state), str(bridge_dirs.workspace))
    workers.append(proc)
    expect_line(proc, "LOCKED")
    return proc


@pytest.mark.usefixtures("short_lock_timeout")
@pytest.mark.parametrize("action", ["add", "remove"])
def test_a_lock_held_by_another_process_gives_a_retryable_registry_error_in_bounded_time(
    bridge_dirs: BridgeDirs, make_bridge: MakeBridge, lock_holder: subprocess.Popen[str], action: str
) -> None:
    bridge = make_bridge(CONFIG)
    before = bridge_dirs.registry.read_bytes()

    started = time.monotonic()
    reply = bridge.add_server("alpha", url="https://a.example/mcp") if action == "add" else bridge.remove_server("seed")
    waited = time.monotonic() - started

    assert isinstance(reply.data, ErrorResult)
    assert (reply.data.code, reply.data.retryable) == ("registry_error", True)
    assert "(retryable)" in reply.text
    assert SHORT_LOCK_TIMEOUT_S <= waited < SHORT_LOCK_TIMEOUT_S + 10  # it waited for the lock, then gave up
    assert bridge_dirs.registry.read_bytes() == before


@pytest.mark.usefixtures("short_lock_timeout")
def test_a_write_succeeds_once_the_other_process_lets_the_lock_go(
    bridge_dirs: BridgeDirs, make_bridge: MakeBridge, lock_holder: subprocess.Popen[str]
) -> None:
    bridge = make_bridge(CONFIG)
    assert bridge.add_server("alpha", url="https://a.example/mcp").is_error
    lock_holder.communicate(input="", timeout=WORKER_DEADLINE_S)  # closing stdin lets it release the lock and exit
    assert lock_holder.returncode == 0

    reply = bridge.add_server("alpha", url="https://a.example/mcp")
    assert not reply.is_error, reply.text


def test_a_corrupt_registry_lists_with_a_warning_the_model_sees_first(
    corrupt: bytes, bridge_dirs: BridgeDirs, make_bridge: MakeBridge
) -> None:
    reply = make_bridge(CONFIG).list_tools()
    assert reply.data.warning is not None and "not valid JSON" in reply.data.warning
    assert reply.text.startswith("Warning: ") and str(bridge_dirs.registry) in reply.text
    assert "- cfg (http, config)" in reply.text


def test_a_readable_registry_lists_without_a_warning_to_the_model(bridge_dirs: BridgeDirs, make_bridge: MakeBridge) -> None:
    reply = make_bridge(CONFIG).list_tools()
    assert reply.data.warning is None
    assert "Warning" not in reply.text
