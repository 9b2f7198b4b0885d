"""Runs OUTSIDE the sandbox, in front of sandbox-exec (macOS): bound the child, then run it.

    python -I -S limits_guard.py FSIZE=1073741824 NOFILE=4096 NPROC_MORE=512 \\
        WATCH_MEMORY=2147483648 WATCH_PROCESSES=512 -- /usr/bin/sandbox-exec -p ... -- cmd

XNU bounds file size and open files per process: FSIZE and NOFILE set RLIMIT_<NAME>, soft and
hard, never above the hard limit inherited, and the command inherits them. It has no per-child
bound for memory or processes (seatbelt.py says why), so:

- NPROC_MORE=n sets RLIMIT_NPROC to the processes the user runs now plus n. XNU counts the user's
  every process against it at each fork, so the child's tree can add about n processes at most:
  a fork bomb stops there, in the kernel, while the user's other programs keep theirs.
- WATCH_MEMORY=bytes and WATCH_PROCESSES=n keep this process as the child's guard. It runs the
  rest in a forked child, polls `ps` every POLL_S, and once the resident memory of the child's
  processes (its tree, every process seen in it since, reparented or not, and the rest of the
  process group the bridge started the guard in) or their number passes the bound, kills them
  all, says so on stderr and exits 137. Otherwise it exits as the child did (128 + the signal for
  a signalled child). A process that leaves both the tree and the group (setsid) between two polls
  is not seen: the watch bounds a runaway server, not one that sets out to escape it.

Without WATCH_* it execs the rest in place (the pid is kept). A limit that cannot be set, or a
`ps` that fails, ends the launch with the traceback before the command runs. Standard library
only; the bridge runs it with its own interpreter and -I -S. Also run on Linux by the tests.
"""

import os
import resource
import select
import signal
import subprocess
import sys

PS = "/bin/ps"
POLL_S = 0.5
KILL_ROUNDS = 20
KILLED_EXIT = 128 + signal.SIGKILL
MIB, GIB = 1 << 20, 1 << 30


def set_limit(which: int, value: int) -> None:
    hard = resource.getrlimit(which)[1]
    bound = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (bound, bound))


def user_processes() -> int:
    """How many processes this real user runs now (what XNU counts against RLIMIT_NPROC)."""
    out = subprocess.run([PS, "-U", str(os.getuid()), "-o", "pid="], capture_output=True, text=True, check=True)
    return len(out.stdout.split())


Process = tuple[int, str]  # (pid, start time): the start time tells a pid seen before from a reused one


def process_table() -> dict[Process, tuple[int, int, int]]:
    """Every process -> (parent pid, process group, resident bytes), from `ps` (the same flags on
    macOS and Linux)."""
    out = subprocess.run([PS, "-A", "-o", "pid=,ppid=,pgid=,rss=,lstart="], capture_output=True, text=True, check=True)
    table = {}
    for line in out.stdout.splitlines():
        fields = line.split(None, 4)
        if len(fields) == 5 and all(field.isdigit() for field in fields[:4]):
            pid, ppid, pgid, rss = map(int, fields[:4])
            table[(pid, fields[4].strip())] = (ppid, pgid, rss * 1024)
    return table


def members(table: dict[Process, tuple[int, int, int]], root: int, seen: set[Process]) -> set[Process]:
    """The child's processes: the root and its descendants, the rest of this guard's process group
    when the guard leads it (the bridge starts it so: a double fork stays in the group), and every
    process seen before that is still alive (reparented or not)."""
    guard = os.getpid()
    group = guard if os.getpgrp() == guard else None  # never the group of whoever started the guard
    found = {
        key for key, (ppid, pgid, _) in table.items()
        if key[0] == root or (pgid == group and key[0] != guard and ppid != guard)  # not the guard's own `ps`
    }
    found |= seen & table.keys()
    children: dict[int, list[Process]] = {}
    for key, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(key)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop()[0], []):
            if child not in found and child[0] != guard:
                found.add(child)
                todo.append(child)
    return found


def kill_all(root: int, seen: set[Process]) -> None:
    """SIGKILL the child's processes, round after round until a look finds none not yet killed
    (what forked after one look is found by the next), then reap the child."""
    doomed = set(seen)
    for _ in range(KILL_ROUNDS):
        for pid in {root, *(pid for pid, _ in doomed)}:
            _signal(pid, signal.SIGKILL)
        try:
            found = members(process_table(), root, set())
        except subprocess.CalledProcessError:
            break
        if found <= doomed:
            break
        doomed |= found
    os.waitpid(root, 0)


def over_bound(usage: tuple[int, int], memory: int | None, processes: int | None) -> str | None:
    """What the tree's (resident bytes, processes) passes, said for a person, or None."""
    resident, count = usage
    counted = f"{count} process" + ("es" if count != 1 else "")
    if memory is not None and resident > memory:
        return f"memory limit hit: {_size(resident)} resident in {counted}, bound {_size(memory)}"
    if processes is not None and count > processes:
        return f"processes limit hit: {counted}, bound {processes}"
    return None


def _size(value: int) -> str:
    return f"{value / GIB:.1f} GiB" if value >= GIB else f"{value / MIB:.0f} MiB"


def exit_status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def guard(argv: list[str], memory: int | None, processes: int | None) -> int:
    """Run argv as a forked child under watch; return the exit status to leave with."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so SIGCHLD reaches the wakeup fd
    forked: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: [_signal(pid, signal.SIGTERM) for pid in forked])  # the bridge's stop
    # Held over the fork, so a stop that comes meanwhile reaches the child with its default action.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    child = os.fork()
    if child == 0:
        signal.set_wakeup_fd(-1)
        for number in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        try:
            os.execv(argv[0], argv)
        except OSError as exc:
            print(f"mcp-bridge limits guard: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        os._exit(127)
    forked.append(child)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # the child alone holds the bridge's pipes: its exit is their EOF
    seen: set[tuple[int, str]] = set()
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return exit_status(status)
        try:
            table = process_table()
        except subprocess.CalledProcessError as exc:
            if exc.returncode < 0:  # `ps` got the group's signal too (the bridge's stop): look again
                _pause(wake_read)
                continue
            problem: str | None = f"cannot watch the child: {PS} failed with {exc.returncode}"
        else:
            seen = members(table, child, seen)
            problem = over_bound((sum(table[key][2] for key in seen), len(seen)), memory, processes)
        if problem is not None:
            kill_all(child, seen)
            print(f"mcp-bridge limits guard: {problem}; the child was killed", file=sys.stderr, flush=True)
            return KILLED_EXIT
        _pause(wake_read)


def _pause(wake_read: int) -> None:
    """Wait POLL_S, or less when a signal (the child's SIGCHLD) arrives."""
    select.select([wake_read], [], [], POLL_S)
    try:
        os.read(wake_read, 4096)
    except BlockingIOError:
        pass


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


def main(argv: list[str]) -> None:
    cut = argv.index("--")
    settings = dict(pair.partition("=")[::2] for pair in argv[:cut])
    unknown = settings.keys() - {"FSIZE", "NOFILE", "NPROC_MORE", "WATCH_MEMORY", "WATCH_PROCESSES"}
    if unknown:
        raise ValueError(f"unknown limits: {sorted(unknown)}")
    for name in ("FSIZE", "NOFILE"):
        if name in settings:
            set_limit(getattr(resource, f"RLIMIT_{name}"), int(settings[name]))
    if "NPROC_MORE" in settings:
        set_limit(resource.RLIMIT_NPROC, user_processes() + int(settings["NPROC_MORE"]))
    memory, processes = settings.get("WATCH_MEMORY"), settings.get("WATCH_PROCESSES")
    command = argv[cut + 1 :]
    if memory is None and processes is None:
        os.execv(command[0], command)
    sys.exit(guard(command, int(memory) if memory else None, int(processes) if processes else None))


if __name__ == "__main__":
    main(sys.argv[1:])
