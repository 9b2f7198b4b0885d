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
  tree, or its number of processes, passes the bound, kills every process it has seen in the tree
  (reparented or not), says so on stderr and exits 137. Otherwise it exits as the child did
  (128 + the signal for a signalled child). A poll cannot see a process that detaches between two
  polls: the watch bounds a runaway server, not one that sets out to escape it.

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


def process_table() -> dict[tuple[int, str], tuple[int, int]]:
    """(pid, start time) -> (parent pid, resident bytes) for every process (`ps`, same flags on
    macOS and Linux). The start time tells a pid seen before from a reused one."""
    out = subprocess.run([PS, "-A", "-o", "pid=,ppid=,rss=,lstart="], capture_output=True, text=True, check=True)
    table = {}
    for line in out.stdout.splitlines():
        fields = line.split(None, 3)
        if len(fields) == 4 and fields[0].isdigit() and fields[1].isdigit() and fields[2].isdigit():
            table[(int(fields[0]), fields[3].strip())] = (int(fields[1]), int(fields[2]) * 1024)
    return table


def tree(table: dict[tuple[int, str], tuple[int, int]], root: int, seen: set[tuple[int, str]]) -> set[tuple[int, str]]:
    """The root, its descendants, and every process seen in the tree before that is still alive."""
    members = {key for key in table if key[0] == root} | (seen & table.keys())
    children: dict[int, list[tuple[int, str]]] = {}
    for key, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(key)
    todo = list(members)
    while todo:
        for child in children.get(todo.pop()[0], []):
            if child not in members:
                members.add(child)
                todo.append(child)
    return members


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
    child = os.fork()
    if child == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        try:
            os.execv(argv[0], argv)
        except OSError as exc:
            print(f"mcp-bridge limits guard: cannot run {argv[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        os._exit(127)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGTERM))  # the bridge's stop, passed on
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # the child alone holds the bridge's pipes: its exit is their EOF
    seen: set[tuple[int, str]] = set()
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return exit_status(status)
        table = process_table()
        seen = tree(table, child, seen)
        problem = over_bound((sum(table[key][1] for key in seen), len(seen)), memory, processes)
        if problem is not None:
            for pid, _ in seen:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            os.waitpid(child, 0)
            print(f"mcp-bridge limits guard: {problem}; the child was killed", file=sys.stderr, flush=True)
            return KILLED_EXIT
        select.select([wake_read], [], [], POLL_S)
        try:
            os.read(wake_read, 4096)
        except BlockingIOError:
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
