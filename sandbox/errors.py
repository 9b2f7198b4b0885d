"""The two ways a sandboxed launch is refused; the bridge reports both as `spawn_failed`.

SandboxUnavailable      no backend works here (the message says how to install one)
 └── InvalidWorkspace   a backend works, but the workspace or a writable path is one it cannot protect
"""

from __future__ import annotations


class SandboxUnavailable(Exception):
    """No sandbox backend works here; the message says how to install one."""


class InvalidWorkspace(SandboxUnavailable):
    """The workspace or a writable capability path would expose what the sandbox must hide."""
