"""The one way a stdio child is launched: `prepare_launch` turns argv into a sandboxed argv.

Layout: `policy` (data: what a child may do), `bubblewrap` and `seatbelt` (pure renderers of a
policy into argv), `environment` (the scrubbed child environment), `probe` (which backend works
here), `command` (how a command becomes the absolute program to run), `launch` (the only impure
part). The bridge spawns the returned `Launch` itself.
"""

from sandbox.command import CommandNotFound, resolve_command
from sandbox.errors import InvalidWorkspace, SandboxUnavailable
from sandbox.launch import Launch, SandboxConfig, prepare_launch, probe

__all__ = ["CommandNotFound", "InvalidWorkspace", "Launch", "SandboxConfig", "SandboxUnavailable", "prepare_launch", "probe", "resolve_command"]
