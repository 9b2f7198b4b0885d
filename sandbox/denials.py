"""Every denial says what it is: turn what a failed child left behind into a sentence.

The bridge calls these after a stdio child failed or ended:

    explain_exit(returncode, stderr, limits)   which limit a child ran into, if any
    explain_network(policy, denied_hosts)      why a host was unreachable, and which setting opens it
    explain_path(policy, path)                 why a path was hidden or read-only, and what opens it

Each returns None when the failure is not the sandbox's doing, so the bridge can fall back to its
usual message.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from sandbox.limits import Limits
from sandbox.policy import Policy, hidden_by

SIGNALS = {signal.SIGXFSZ: "file size", signal.SIGXCPU: "CPU time"}
PATTERNS = (
    ("memory", re.compile(
        r"MemoryError|out of memory|Cannot allocate memory|std::bad_alloc|ENOMEM|"
        r"Failed to reserve virtual memory|allocation failed|memory allocation of \d+ bytes failed|"
        r"limits guard: memory limit hit",
        re.IGNORECASE)),
    ("processes", re.compile(
        r"Resource temporarily unavailable|EAGAIN|fork: retry|can't fork|cannot fork|limits guard: processes limit hit",
        re.IGNORECASE)),
    ("file size", re.compile(r"File too large|EFBIG", re.IGNORECASE)),
    ("open files", re.compile(r"Too many open files|EMFILE", re.IGNORECASE)),
)  # fmt: skip
SETTINGS = {
    "memory": "memory_bytes", "processes": "processes", "file size": "file_bytes",
    "open files": "open_files",
}  # fmt: skip


def explain_exit(
    returncode: int | None, stderr: str, limits: Limits, knobs: Mapping[str, str] | None = None
) -> str | None:
    """"limit hit: <which> (...)" when the exit status or the stderr tail shows a sandbox limit.

    `knobs` names the caller's setting for each limit (`{"memory": "MCP_CHILD_MEMORY_MB"}`).
    """
    which = _limit_from_status(returncode) or _limit_from_stderr(stderr[-8192:], limits)
    if which is None:
        return None
    value = getattr(limits, SETTINGS.get(which, ""), None)
    bound = f" of {_size(value) if which in ('memory', 'file size') else value}" if value else ""
    knob = (knobs or {}).get(which, "it in the sandbox limits")
    return f"limit hit: {which} (the sandbox's per-child limit{bound}); raise {knob}"


def _limit_from_status(returncode: int | None) -> str | None:
    if returncode is None:
        return None
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    try:
        return SIGNALS.get(signal.Signals(number))
    except ValueError:
        return None


def _limit_from_stderr(stderr: str, limits: Limits) -> str | None:
    for which, pattern in PATTERNS:
        if getattr(limits, SETTINGS[which]) is not None and pattern.search(stderr):
            return which
    return None


def _size(value: int) -> str:
    return f"{value / (1 << 30):g} GiB" if value >= 1 << 30 else f"{value / (1 << 20):g} MiB"


def explain_network(policy: Policy, denied_hosts: Sequence[str] = ()) -> str:
    """Why the child could not reach the network, naming the setting that would let it."""
    tried = f" (it tried {', '.join(sorted(set(denied_hosts)))})" if denied_hosts else ""
    if policy.network == "deny":
        return (
            f"network denied by the sandbox{tried}: children have no network unless "
            "MCP_SANDBOX_NETWORK or the server's `network` setting allows it"
        )
    if policy.network == "proxy":
        return (
            f"network denied by the sandbox{tried}: this server may reach only "
            f"{', '.join(policy.allowed_hosts)}; add a host to the server's `network` domain list"
        )
    return f"network allowed by the sandbox{tried}; the failure is not the sandbox's"


def explain_path(policy: Policy, path: Path) -> str | None:
    """Why `path` is hidden or read-only in the sandbox, or None when the child may write it."""
    hider = hidden_by(policy, path)
    if hider is not None:
        return f"{path} is hidden by the sandbox (inside {hider}); add it to the server's read_paths"
    real = Path(path)
    for own in policy.own:
        if real.is_relative_to(own):
            return f"{path} is read-only in the sandbox: {own} is the bridge's own code or environment, which no child may write"
    for guarded in (*policy.protected, *(p.path for p in policy.placeholders)):
        if real.is_relative_to(guarded):
            what = "a git dir" if ".git" in guarded.parts else "a config path the host trusts"
            extra = " or git_write_paths" if what == "a git dir" else ""
            return f"{path} is read-only in the sandbox ({guarded} is {what}); the server's write_paths{extra} cannot open it unless the developer config names it"
    if not any(real.is_relative_to(root) for root in policy.writable):
        return f"{path} is read-only in the sandbox; add a folder holding it to the server's write_paths"
    return None
