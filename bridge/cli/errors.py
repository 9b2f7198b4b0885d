"""Exit codes scripts can rely on, and the one error type the commands raise.

    exit  meaning                                        bridge error codes
    0     success
    1     a check failed: probe found a tool a host       tool_error
          would drop, import left entries out
    2     usage or invalid argument                      invalid_argument (argparse also exits 2)
    3     not found                                      unknown_server, unknown_tool
    4     forbidden                                      forbidden
    5     registry error                                 registry_error
    6     the downstream server failed                   spawn_failed, child_exited, connect_failed,
                                                         http_error, auth_required, protocol_error,
                                                         timeout
"""

from __future__ import annotations

import argparse
import re
from enum import IntEnum

from bridge.errors import ErrorCode, ErrorResult


class Exit(IntEnum):
    OK = 0
    CHECK_FAILED = 1
    USAGE = 2
    NOT_FOUND = 3
    FORBIDDEN = 4
    REGISTRY = 5
    DOWNSTREAM = 6


EXIT_FOR_CODE: dict[ErrorCode, Exit] = {
    "invalid_argument": Exit.USAGE,
    "unknown_server": Exit.NOT_FOUND,
    "unknown_tool": Exit.NOT_FOUND,
    "forbidden": Exit.FORBIDDEN,
    "registry_error": Exit.REGISTRY,
    "spawn_failed": Exit.DOWNSTREAM,
    "child_exited": Exit.DOWNSTREAM,
    "connect_failed": Exit.DOWNSTREAM,
    "http_error": Exit.DOWNSTREAM,
    "auth_required": Exit.DOWNSTREAM,
    "protocol_error": Exit.DOWNSTREAM,
    "timeout": Exit.DOWNSTREAM,
    "tool_error": Exit.CHECK_FAILED,
}

EPILOG = """\
exit codes:
  0  success
  1  a check failed (probe: a host would drop a tool; import: entries left out)
  2  usage error or invalid argument
  3  not found (unknown server)
  4  forbidden (e.g. removing a server the developer provisioned)
  5  registry error (unreadable registry file, lock held too long)
  6  the downstream server failed (spawn, exit, connect, HTTP, protocol, timeout)"""


class CliError(Exception):
    """A failure to report on stderr as one line (plus detail lines) and exit with `exit`."""

    def __init__(self, message: str, exit: Exit = Exit.USAGE, detail: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit = exit
        self.detail = detail or []

    @classmethod
    def from_result(cls, error: ErrorResult) -> CliError:
        """A bridge error, with the child's last stderr lines when there are any (never header values)."""
        tail = error.detail.get("stderr_tail")
        detail = [f"  stderr: {line}" for line in tail] if isinstance(tail, list) else []
        return cls(f"{for_the_cli(error.message)} [{error.code}]", EXIT_FOR_CODE[error.code], detail)


# What the bridge tells a model to do, as a person at the command line does it.
_FOR_THE_CLI = (
    (re.compile(r"Call mcp_list_tools without a server to see them\."), "Run `mcp-bridge servers list` to see them."),
    (re.compile(r"Call mcp_list_tools to see the tools\."), "Run `mcp-bridge probe SERVER` to see the tools."),
    (re.compile(r"after mcp_add_server re-registers ('[^']*')"), r"after `mcp-bridge servers add` re-registers \1"),
    (re.compile(r"re-adding the server with mcp_add_server"), "re-adding the server with `mcp-bridge servers add`"),
    (re.compile(r"Adding or removing servers fails"), "`mcp-bridge servers add` and `remove` fail"),
)


def for_the_cli(message: str) -> str:
    """A message written for the model, with its instructions in the CLI's words."""
    for pattern, replacement in _FOR_THE_CLI:
        message = pattern.sub(replacement, message)
    return message



def add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, summary: str, description: str
) -> argparse.ArgumentParser:
    """A subcommand whose --help keeps the description's line breaks and ends with the exit codes."""
    return commands.add_parser(
        name, help=summary, description=description, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
