"""`mcp-bridge servers list|show|add|remove`: the registry through the same code as the tools.

add and remove call `Bridge.add_server` / `Bridge.remove_server`, so the CLI validates, writes
and refuses exactly as `mcp_add_server` and `mcp_remove_server` do. Header and env values are
never printed: their names are shown with `<redacted>`. `show` gives a stdio server's sandbox as
a spawn would make it now (`Bridge.plan`, which creates nothing): the program, the private home,
the network, the hidden trees shown back read-only, and why it cannot start, if it cannot.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bridge.cli.context import load_settings, open_bridge, succeeded
from bridge.cli.errors import CliError, add_command
from bridge.cli.render import table
from bridge.errors import BridgeError
from bridge.models import (
    AddResult,
    HttpServerSpec,
    Origin,
    RemoveResult,
    ServerList,
    ServerSpec,
    StdioServerSpec,
    ToolPolicy,
)
from bridge.tools import Bridge, validation
from bridge.wording import escaped
from sandbox import Plan, SandboxUnavailable
from sandbox.command import CommandNotFound, resolve_command

REDACTED = "<redacted>"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    servers = add_command(
        commands,
        "servers",
        "list, show, add and remove servers",
        "The registered servers: the developer's (config.MCP_SERVERS) and the dynamic registry's.",
    )
    actions = servers.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = add_command(actions, "list", "list the registered servers", "List every registered server.")
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    listing.set_defaults(run=list_servers)

    show = add_command(
        actions, "show", "show one server's entry", "Show one server's registry entry (header and env values redacted)."
    )
    show.add_argument("name", help="a registered server's name")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(run=show_server)

    add = add_command(
        actions,
        "add",
        "add or replace a dynamic server",
        "Add (or replace) a dynamic server, checked exactly as mcp_add_server checks it.\n\n"
        "  mcp-bridge servers add docs --url https://example.com/mcp --header 'Authorization: Bearer ...'\n"
        "  mcp-bridge servers add fs --cwd ~/project -- npx -y @modelcontextprotocol/server-filesystem .\n\n"
        "A bare command name is looked up on PATH and stored as an absolute path. Put `--` before\n"
        "the command line when it has options of its own. Header values are stored in the registry\n"
        "(mode 0600) and never printed.",
    )
    add.usage = "mcp-bridge servers add [-h] NAME (--url URL [--header 'NAME: VALUE']... | [--cwd DIR] -- COMMAND [ARG ...])"
    add.add_argument("name", help="letters, digits, _ and -, at most 64")
    add.add_argument("--url", help="a Streamable HTTP endpoint (http:// or https://)")
    add.add_argument(
        "--header", action="append", default=[], metavar="'NAME: VALUE'", help="an HTTP header for --url (repeatable)"
    )
    add.add_argument("--cwd", metavar="DIR", help="the stdio server's working directory, inside the workspace (default: workspace)")
    add.add_argument("command_line", nargs="*", metavar="COMMAND", help="a local stdio server's program, then its arguments")
    add.set_defaults(run=add_server)

    remove = add_command(
        actions,
        "remove",
        "remove a dynamic server",
        "Remove a dynamic server; a server the developer provisioned cannot be removed (exit 4).",
    )
    remove.add_argument("name", help="a dynamic server's name")
    remove.set_defaults(run=remove_server)


def split_command_line(argv: list[str]) -> tuple[list[str], list[str]]:
    """`servers add ... -- COMMAND ARGS`: argparse (3.11) cannot put what follows `--` in a `*` positional."""
    if argv[:2] == ["servers", "add"] and "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


def list_servers(args: argparse.Namespace) -> int:
    with open_bridge(load_settings()) as bridge:
        data: ServerList = succeeded(bridge.list_tools())
    if data.warning:
        print(f"mcp-bridge: warning: {data.warning}", file=sys.stderr)
    if args.json:
        print(json.dumps([server.model_dump(mode="json") for server in data.servers], indent=2))
    elif data.servers:
        rows = [[server.name, server.transport, server.origin, server.target] for server in data.servers]
        print(table(rows, ["NAME", "TRANSPORT", "ORIGIN", "TARGET"]))
    else:
        print("No servers are registered.")
    return 0


def entry_details(name: str, spec: ServerSpec, origin: Origin, policy: ToolPolicy | None) -> dict[str, Any]:
    """A registry entry as the CLI shows it: every field, but header and env values redacted, and
    the developer's tool policy for the name (which binds a dynamic entry of that name too)."""
    details: dict[str, Any] = {"name": name, "transport": spec.transport, "origin": origin}
    if isinstance(spec, HttpServerSpec):
        details |= {"url": spec.url, "headers": dict.fromkeys(spec.headers, REDACTED)}
    else:
        details |= {"command": spec.command, "args": list(spec.args), "cwd": spec.cwd}
        details |= {"env": dict.fromkeys(spec.env, REDACTED), "network": spec.network}
        details |= {"read_paths": list(spec.read_paths), "write_paths": list(spec.write_paths)}
        details["git_write_paths"] = list(spec.git_write_paths)
    details["added_at"] = spec.added_at.isoformat() if spec.added_at else None
    if policy is not None:
        details["tool_policy"] = policy.model_dump(mode="json")
    return details


def sandbox_details(plan: Plan) -> dict[str, Any]:
    """What the child would get: its program, home, network, the hidden trees shown back, the problem."""
    network = plan.network if isinstance(plan.network, str) else list(plan.network)
    return {
        "backend": plan.backend,
        "program": plan.executable,
        "home": str(plan.home),
        "network": network,
        "allowed_hosts": list(plan.policy.allowed_hosts),
        "exposed": [str(path) for path in plan.policy.exposed],
        "writable": [str(path) for path in plan.policy.writable],
        "problem": plan.problem,
    }


def _sandbox(bridge: Bridge, name: str, spec: StdioServerSpec) -> dict[str, Any]:
    try:
        return sandbox_details(bridge.plan(name, spec))
    except (SandboxUnavailable, CommandNotFound) as exc:
        return {"problem": str(exc)}


def show_server(args: argparse.Namespace) -> int:
    with open_bridge(load_settings()) as bridge:
        try:
            name = validation.server_name(args.name)
            spec = bridge.registry.get(name)
        except BridgeError as exc:
            raise CliError.from_result(exc.to_result()) from None
        origin = bridge.registry.merged()[name][1]
        provisioned = bridge.registry.config_servers.get(name)
        plan = _sandbox(bridge, name, spec) if isinstance(spec, StdioServerSpec) else None
    details = entry_details(name, spec, origin, provisioned.tools if provisioned is not None else None)
    if plan is not None:
        details["sandbox"] = plan
    if args.json:
        print(json.dumps(details, indent=2))
        return 0
    for key, value in details.items():
        if isinstance(value, dict):
            print(f"{key}:" + ("" if value else " none"))
            for item, shown in value.items():
                if shown is not None:
                    print(f"  {item}: {json.dumps(shown) if isinstance(shown, list) else escaped(str(shown))}")
        elif isinstance(value, list):
            print(f"{key}: {json.dumps(value)}")
        elif value is not None:
            print(f"{key}: {escaped(str(value))}")
    return 0


def _headers(values: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        key, colon, item = value.partition(":")
        if not colon:
            raise CliError("--header takes 'Name: value'")
        headers[key.strip()] = item.strip()
    return headers


def _absolute_command(command: str) -> str:
    """What a host does with a command: a bare name from PATH, a relative path from the current directory."""
    try:
        return resolve_command(command, path_env=os.environ.get("PATH", os.defpath), base=Path.cwd())
    except CommandNotFound as exc:
        raise CliError(str(exc)) from None


def add_server(args: argparse.Namespace) -> int:
    headers = _headers(args.header)
    command, *command_args = args.command_line or [None]
    with open_bridge(load_settings()) as bridge:
        data: AddResult = succeeded(
            bridge.add_server(
                args.name,
                url=args.url,
                headers_json=json.dumps(headers) if headers else None,
                command=_absolute_command(command) if command else None,
                args_json=json.dumps(command_args) if command_args else None,
                cwd=args.cwd,
            )
        )
    verb = "replaced" if data.replaced else "added"
    print(f"{verb} {data.server.name} ({data.server.transport}, {data.server.origin}): {escaped(data.server.target)}")
    return 0


def remove_server(args: argparse.Namespace) -> int:
    with open_bridge(load_settings()) as bridge:
        data: RemoveResult = succeeded(bridge.remove_server(args.name))
    restored = "; the developer's config entry of that name applies again" if data.restored_config_entry else ""
    print(f"removed {data.name}{restored}")
    return 0
