"""Helpers for tests: locating fixture servers, running HTTP fixtures on free ports, and
inspecting processes through /proc (to prove nothing is left behind).

No sleeps: the HTTP start-up waits on the child's stdout with a selector, and
``wait_pids_gone`` waits on pidfds.
"""

from __future__ import annotations

import os
import select
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

SERVERS_DIR = Path(__file__).resolve().parent / "servers"


def fixture_path(name: str) -> str:
    """Absolute path of a fixture server script; ``"echo"`` and ``"echo.py"`` both work."""
    if not name.endswith(".py"):
        name += ".py"
    path = SERVERS_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"no fixture server {name!r} in {SERVERS_DIR}")
    return str(path)


def _read_port_line(proc: subprocess.Popen, timeout: float) -> int:
    """Read the child's stdout until a ``PORT <n>`` line, the child's exit, or the deadline."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no 'PORT <n>' line within {timeout} s; stdout so far: {buffer!r}")
            if not sel.select(remaining):
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"fixture closed stdout before 'PORT <n>'; stdout so far: {buffer!r}")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.startswith(b"PORT "):
                    return int(line.split()[1])


def _drain(stream) -> None:
    """Discard whatever else the child writes to stdout, so it can never block on the pipe."""
    try:
        while stream.read1(65536):
            pass
    except (OSError, ValueError):
        pass


def _stop(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM the child's process group, SIGKILL it after ``grace`` seconds, then reap."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # the group may hold grandchildren even after the leader is gone
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


@contextmanager
def start_http_fixture(
    script: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    startup_timeout: float = 30.0,
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Run ``python tests/servers/<script> --http *args`` and yield ``(base_url, proc)``.

    ``base_url`` is ``http://127.0.0.1:<port>`` (the FastMCP fixtures serve MCP at
    ``base_url + "/mcp"``). ``env`` is merged over ``os.environ``. The child runs in its own
    session/process group; on exit the group gets SIGTERM, then SIGKILL, and the child is reaped.
    The child's stderr goes to a temporary file; it is quoted if start-up fails.
    """
    child_env = dict(os.environ)
    child_env.update(env or {})
    stderr_file = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [sys.executable, fixture_path(script), "--http", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr_file,
        env=child_env,
        start_new_session=True,
    )
    try:
        try:
            port = _read_port_line(proc, startup_timeout)
        except Exception as e:
            _stop(proc)
            stderr_file.seek(0)
            tail = stderr_file.read()[-4000:].decode(errors="replace")
            raise RuntimeError(f"{script} did not start (exit code {proc.returncode}): {e}\nstderr:\n{tail}") from e
        threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
        yield f"http://127.0.0.1:{port}", proc
    finally:
        _stop(proc)
        if proc.stdout is not None:
            proc.stdout.close()
        stderr_file.close()


# --- processes -------------------------------------------------------------------------------


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process from /proc/<pid>/stat, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        return None
    rest = data[data.rindex(")") + 2 :].split()  # the command name may contain spaces and ')'
    return rest[0], int(rest[1])


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def is_alive(pid: int) -> bool:
    """True if the process exists and is not a zombie (exited but not yet reaped)."""
    stat = _proc_stat(pid)
    return stat is not None and stat[0] != "Z"


def descendants(pid: int) -> set[int]:
    """Pids of all living (non-zombie) descendants of ``pid``, found through /proc ppid links.

    A process re-parented to init (or a subreaper) after its parent died is no longer counted:
    use ``pids_with_marker`` to find such orphans.
    """
    children: dict[int, list[int]] = {}
    for p in _all_pids():
        stat = _proc_stat(p)
        if stat is not None and stat[0] != "Z":
            children.setdefault(stat[1], []).append(p)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def pids_with_marker(marker: str) -> set[int]:
    """Pids of living (non-zombie) processes whose command line contains ``marker``.

    The command line is read from /proc/<pid>/cmdline with NULs turned into spaces. The calling
    process is excluded. Pass a unique token as an extra fixture argument to make it findable.
    """
    me = os.getpid()
    found: set[int] = set()
    for p in _all_pids():
        if p == me:
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and is_alive(p):
            found.add(p)
    return found


def wait_pids_gone(pids: Iterable[int], timeout: float) -> set[int]:
    """Wait (on pidfds, no polling) until every pid has exited; return the ones still alive.

    An exited-but-unreaped process (zombie) counts as gone.
    """
    fds: dict[int, int] = {}
    try:
        for pid in pids:
            try:
                fds[os.pidfd_open(pid)] = pid
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        with select.epoll() as ep:
            for fd in fds:
                ep.register(fd, select.EPOLLIN)
            pending = set(fds)
            while pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                for fd, _ in ep.poll(remaining):
                    pending.discard(fd)
                    ep.unregister(fd)
        return {fds[fd] for fd in pending}
    finally:
        for fd in fds:
            os.close(fd)
