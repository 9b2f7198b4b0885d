"""`mcp-bridge`: serve (the default), or manage and check the servers the bridge reaches.

Without a command, or when the first argument is an option, every argument goes to `bridge.host.main`,
so `mcp-bridge` and `mcp-bridge --transport http --port 8765` serve exactly as they always have;
`mcp-bridge serve ...` is the same thing spelt out.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys

from bridge.arguments import Parser
from bridge.cli.errors import EPILOG, CliError, Exit
from bridge.wording import escaped, log_to_stderr


def build_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top: serving (the default) loads none of the commands' modules.
    from bridge.cli import audit, auth, desktop, importer, probe, servers

    parser = Parser(
        prog="mcp-bridge",
        description="An MCP server with four fixed tools that reach other MCP servers.\n\n"
        "Without a command it serves (stdio by default): `mcp-bridge [--transport http] [--host H]\n"
        "[--port P]` is `mcp-bridge serve ...`. Settings come from MCP_* environment variables.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    commands.add_parser(
        "serve", help="serve the bridge over stdio or HTTP (the default; see `mcp-bridge serve --help`)", add_help=False
    )
    servers.register(commands)
    importer.register(commands)
    probe.register(commands)
    desktop.register(commands)
    audit.register(commands)
    auth.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] == "serve" or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        # Serving imports some 1,400 modules, FastMCP's side only now; looking for reference cycles
        # among them while they load cost the start ~100 ms, and there are none to collect.
        gc.disable()
        try:
            from bridge.host.main import main as serve
        finally:
            gc.enable()
        return serve(argv[1:] if argv[:1] == ["serve"] else argv)
    log_to_stderr(logging.WARNING, "mcp-bridge: %(levelname)s: %(message)s")
    from bridge.cli.servers import split_command_line

    head, command_line = split_command_line(argv)
    try:
        args = build_parser().parse_args(head)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed by argparse
        return exc.code if isinstance(exc.code, int) else Exit.USAGE
    if command_line:
        args.command_line = [*args.command_line, *command_line]
    try:
        return int(args.run(args))
    except BrokenPipeError:
        # The reader went away (`mcp-bridge audit | head`): stop quietly with 1, as the Python docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.CHECK_FAILED
    except CliError as exc:
        print(f"mcp-bridge: error: {escaped(exc.message)}", file=sys.stderr)
        for line in exc.detail:
            print(escaped(line), file=sys.stderr)
        return int(exc.exit)
