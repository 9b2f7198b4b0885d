"""The two ways a sandboxed launch is refused; the bridge reports both as `spawn_failed`.

SandboxUnavailable      no backend works here (the message says how to install one)
 └── InvalidWorkspace   a backend works, but the workspace or a writable path is one it cannot protect
CommandNotFound         (sandbox.command) the command resolves to no program
 └── NotRunnable        it resolves, but cannot start inside the sandbox (hidden interpreter, no #!
                        line, not executable); checked before spawn, not retryable
"""

from __future__ import annotations

from sandbox.command import CommandNotFound


class SandboxUnavailable(Exception):
    """No sandbox backend works here; the message says how to install one."""


class InvalidWorkspace(SandboxUnavailable):
    """The workspace or a writable capability path would expose what the sandbox must hide."""


class NotRunnable(CommandNotFound):
    """The command exists but cannot start in the sandbox; the message says why and what to set."""
