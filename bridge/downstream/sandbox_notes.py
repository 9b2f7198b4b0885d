"""What the sandbox did to a failed stdio child, as one sentence naming the setting that changes it.

A child the sandbox held back rarely says so: a refused proxy CONNECT looks like `fetch failed`, a
missing DNS like a resolver error, a hidden file like ENOENT, a limit like `MemoryError`. After the
child failed, `sandbox_note` looks at what is known (the launch's policy and limits, the proxy's
refusals since the spawn, the exit status and stderr tail) and asks `sandbox.denials` for the
sentence; None when nothing points at the sandbox, so the usual message stands alone. A child
that lives on but whose tool failed on a refused write gets the same sentence from
`refused_write_note`, after the tool's own error text.
"""

from __future__ import annotations

import re
from pathlib import Path

from bridge.wording import one_line
from sandbox import FilteringProxy, Launch, explain_exit, explain_network, explain_path
from sandbox.policy import hidden_by

# The knob of each limit `explain_exit` names.
LIMIT_SETTINGS = {
    "memory": "MCP_CHILD_MEMORY_MB", "processes": "MCP_CHILD_PROCESSES", "file size": "MCP_CHILD_FILE_MB",
    "open files": "MCP_CHILD_OPEN_FILES",
}  # fmt: skip
NETWORK_FAILED = re.compile(  # as clients print them; case matters ("FileNotFoundError" is no ENOTFOUND)
    r"Temporary failure in name resolution|Name or service not known|No address associated|getaddrinfo|"
    r"\b(EAI_AGAIN|ENOTFOUND|ENETUNREACH|ECONNREFUSED)\b|Network is unreachable|Could not resolve host|"
    r"fetch failed|ConnectError|Tunnel connection failed"
)
WRITE_DENIED = re.compile(r"Read-only file system|EROFS|Permission denied|EACCES|Operation not permitted|EPERM")
NOTE_LIMIT = 600
READ_ONLY = re.compile(r"Read-only file system|EROFS")  # only a mount says this: the sandbox's
MISSING = re.compile(r"No such file or directory|ENOENT|not found", re.IGNORECASE)
QUOTED_PATH = re.compile(r"""['"`](/[^'"`\n]+)['"`]|(?<![\w/.])(/(?:[\w.@+-]+/)*[\w.@+-]+)""")


def sandbox_note(
    launch: Launch | None, proxy: FilteringProxy | None, returncode: int | None, stderr: list[str]
) -> str | None:
    """The sandbox's part in a child's failure, or None when nothing points at it."""
    if launch is None or launch.policy is None:
        return None  # no sandbox (MCP_SANDBOX=none): it held nothing back
    tail = "\n".join(stderr)
    if launch.limits is not None and (limit := explain_exit(returncode, tail, launch.limits, LIMIT_SETTINGS)):
        return limit
    denied = _denied_hosts(launch, proxy)
    if denied:
        return explain_network(launch.policy, denied)
    if (path := _path_note(launch, stderr)) is not None:
        return path
    if launch.policy.network == "deny" and NETWORK_FAILED.search(tail):
        return explain_network(launch.policy)
    return None


def refused_write_note(launch: Launch | None, error_text: str) -> str | None:
    """The sandbox's part in a tool's own error: a write it refused inside the tool (EROFS, EACCES
    in the error's text), naming the path and `write_paths`; None when nothing points at it."""
    if launch is None or launch.policy is None or not WRITE_DENIED.search(error_text):
        return None
    note = _path_note(launch, error_text.splitlines())
    if note is None and READ_ONLY.search(error_text):
        note = (
            "the sandbox refused a write: children may write only the workspace, their private home "
            "and /tmp, and the server's write_paths (developer config)"
        )
    return f"[{one_line(note, NOTE_LIMIT)}]" if note is not None else None  # its path is the tool's text


def _denied_hosts(launch: Launch, proxy: FilteringProxy | None) -> list[str]:
    if proxy is None or launch.proxy is None:
        return []
    return [denial.host for denial in proxy.denials(launch.proxy.socket, since=launch.started)]


def _path_note(launch: Launch, stderr: list[str]) -> str | None:
    """A path in an error line the sandbox hid (any error) or kept read-only (a refused write)."""
    assert launch.policy is not None
    for line in reversed(stderr):
        refused, missing = WRITE_DENIED.search(line), MISSING.search(line)
        if not (refused or missing):
            continue
        for quoted, bare in QUOTED_PATH.findall(line):
            path = Path(quoted or bare)
            if refused or hidden_by(launch.policy, path) is not None:
                note = explain_path(launch.policy, path)
                if note is not None:
                    return note
    return None
