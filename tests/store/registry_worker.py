"""A separate process that writes the registry, for the fault tests in test_registry_faults.py.

    registry_worker.py stress FACE INDEX WRITES STATE WORKSPACE
        FACE is `bridge` (the sync tool faces hosts use) or `registry` (the Registry itself).
        Prints READY, waits for a GO line on stdin, then adds and removes its own servers WRITES
        times and prints one JSON line: {"mine": {name: url}, "retries": n, "slowest": s}: what it
        left behind, how many lock timeouts it retried, its longest write in seconds.
    registry_worker.py kill-before|kill-after NAME STATE WORKSPACE
        Adds NAME; inside the write (after the temp file is fsynced and before it replaces the
        registry, or right after the replace) prints WINDOW and blocks until it is killed.
    registry_worker.py hold STATE WORKSPACE
        Takes the registry's lock as another writer would, prints LOCKED, holds it until stdin closes.
    registry_worker.py fsize NAME STATE WORKSPACE
        Adds NAME under a 1 KiB file size limit and prints the error code the add ended with.

Every line goes to stdout and is flushed at once: the test waits on these lines, never on time.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import portalocker

from bridge.errors import BridgeError, ErrorResult
from bridge.models import HttpServerSpec
from bridge.settings import Settings
from bridge.store import json_file
from bridge.store.registry import Registry
from bridge.tools import Bridge, Reply


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def registry_for(state: Path, workspace: Path) -> Registry:
    settings = Settings(workspace=workspace, state_dir=state)
    return Registry(path=settings.registry_path, legacy_path=settings.legacy_registry_path, config_servers={})


def checked(reply: Reply) -> None:
    """A tool face answers with an error result; raise it again to handle both faces alike."""
    if isinstance(reply.data, ErrorResult):
        raise BridgeError(reply.data.code, reply.data.message, retryable=reply.data.retryable)


def write_many(index: int, writes: int, add: Callable[[str, str], None], remove: Callable[[str], None]) -> dict:
    """Cycle over three names of its own: add (with a URL that says which write it was) or remove."""
    mine: dict[str, str] = {}
    retries, slowest = 0, 0.0
    say("READY")
    if sys.stdin.readline().strip() != "GO":
        raise SystemExit("no GO line")
    for k in range(writes):
        name, url = f"w{index}-{k % 3}", f"https://w{index}.example/{k}"
        removing = name in mine and k % 4 == 3
        started = time.monotonic()
        while True:
            try:
                if removing:
                    remove(name)
                else:
                    add(name, url)
                break
            except BridgeError as exc:
                if not exc.retryable:
                    raise
                retries += 1  # a lock timeout: the code says try again, so we do
        slowest = max(slowest, time.monotonic() - started)
        if removing:
            del mine[name]
        else:
            mine[name] = url
    return {"mine": mine, "retries": retries, "slowest": slowest}


def stress(face: str, index: int, writes: int, state: Path, workspace: Path) -> None:
    if face == "registry":
        registry = registry_for(state, workspace)
        outcome = write_many(index, writes, lambda name, url: registry.add(name, HttpServerSpec(url=url)), registry.remove)
    else:
        bridge = Bridge(Settings(workspace=workspace, state_dir=state), {})
        try:
            outcome = write_many(
                index,
                writes,
                lambda name, url: checked(bridge.add_server(name, url=url)),
                lambda name: checked(bridge.remove_server(name)),
            )
        finally:
            bridge.close()  # its worker thread would otherwise keep a failed process alive
    say(json.dumps(outcome))


def kill_in_window(when: str, name: str, state: Path, workspace: Path) -> None:
    def wait_to_be_killed(_: Path) -> None:
        say("WINDOW")
        sys.stdin.read()  # the test never closes stdin: it sends SIGKILL
        raise SystemExit("stdin closed instead of SIGKILL")

    def replace(temp: Path, path: Path) -> None:
        if when == "kill-before":
            wait_to_be_killed(temp)
        else:
            os.replace(temp, path)
            wait_to_be_killed(path)

    json_file._replace = replace  # stop this writer inside the window it names
    registry_for(state, workspace).add(name, HttpServerSpec(url=f"https://{name}.example/mcp"))
    say("WRITTEN")  # never reached when the test kills us as it should


def hold(state: Path, workspace: Path) -> None:
    path = registry_for(state, workspace).path
    path.parent.mkdir(parents=True, exist_ok=True)
    with portalocker.Lock(str(path) + ".lock", mode="a", timeout=0, flags=portalocker.LOCK_EX | portalocker.LOCK_NB):
        say("LOCKED")
        sys.stdin.read()


def add_over_size_limit(name: str, state: Path, workspace: Path) -> None:
    """A write that the file system refuses halfway (EFBIG, like a full disk) must end classified."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG from write() instead of dying
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
    try:
        registry_for(state, workspace).add(name, HttpServerSpec(url="https://big.example/" + "x" * 4096))
    except BridgeError as exc:
        say(json.dumps({"code": exc.code, "retryable": exc.retryable, "message": exc.message}))
    else:
        say(json.dumps({"code": None}))


def main(argv: list[str]) -> None:
    mode, *rest = argv
    if mode == "stress":
        face, index, writes, state, workspace = rest
        stress(face, int(index), int(writes), Path(state), Path(workspace))
    elif mode in ("kill-before", "kill-after"):
        name, state, workspace = rest
        kill_in_window(mode, name, Path(state), Path(workspace))
    elif mode == "hold":
        state, workspace = rest
        hold(Path(state), Path(workspace))
    elif mode == "fsize":
        name, state, workspace = rest
        add_over_size_limit(name, Path(state), Path(workspace))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
