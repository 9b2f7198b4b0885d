"""The one way a stdio child is launched: `prepare_launch` turns argv into a sandboxed argv.

Layout: `policy` (data: what a child may do), `bubblewrap` and `seatbelt` (pure renderers of a
policy into argv), `environment` (the scrubbed child environment), `probe` (which backend works
here), `launch` (the only impure part). The bridge hands the returned `Launch` to the MCP SDK's
stdio transport unchanged.
"""

from sandbox.command import CommandNotFound, resolve_command
from sandbox.errors import InvalidWorkspace, SandboxUnavailable
from sandbox.launch import Launch, SandboxConfig, prepare_launch

__all__ = ["CommandNotFound", "InvalidWorkspace", "Launch", "SandboxConfig", "SandboxUnavailable", "prepare_launch", "resolve_command"]
