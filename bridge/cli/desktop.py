"""`mcp-bridge config claude-desktop`: a claude_desktop_config.json entry that starts this very bridge.

Claude Desktop starts servers from `/` with a bare environment, so everything in the entry is
absolute: the `mcp-bridge` script of the running install (or its Python with `-m bridge.cli`), the
workspace and the state directory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bridge.cli.context import load_settings
from bridge.cli.errors import CliError, add_command
from bridge.settings import config_path, own_paths, workspace_problem


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = add_command(commands, "config", "print host configuration for this bridge", "Print host configuration.")
    hosts = group.add_subparsers(dest="host", required=True, metavar="HOST")
    claude = add_command(
        hosts,
        "claude-desktop",
        "a claude_desktop_config.json entry",
        "Print a claude_desktop_config.json object that starts this bridge over stdio, with absolute\n"
        "paths for the command, MCP_WORKSPACE and MCP_STATE_DIR. Merge its mcpServers entry into\n"
        "claude_desktop_config.json (macOS: ~/Library/Application Support/Claude/, Windows:\n"
        "%APPDATA%\\Claude\\) and restart Claude Desktop. Other MCP_* settings can be added to env.",
    )
    claude.add_argument("--name", default="mcp-bridge", help="the entry's name in mcpServers (default: mcp-bridge)")
    claude.add_argument("--workspace", help="the approved workspace (default: MCP_WORKSPACE, else the current dir)")
    claude.add_argument("--state-dir", help="the state dir (default: MCP_STATE_DIR, else work/ in this project)")
    claude.set_defaults(run=claude_desktop)


def bridge_command() -> list[str]:
    """The installed `mcp-bridge` beside this Python; the interpreter itself where there is none.

    `sys.executable` is taken as it is, not resolved: a venv's python is a symlink to one outside it.
    """
    python = Path(sys.executable).absolute()
    script = python.with_name("mcp-bridge")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), "-m", "bridge.cli"]


def desktop_entry(name: str, workspace: Path, state_dir: Path, config: Path | None) -> dict[str, Any]:
    command, *args = bridge_command()
    env = {"MCP_WORKSPACE": str(workspace), "MCP_STATE_DIR": str(state_dir)}
    if config is not None:  # Claude Desktop starts the bridge from /, far from any checkout
        env["MCP_CONFIG"] = str(config)
    return {"mcpServers": {name: {"command": command, "args": args, "env": env}}}


def claude_desktop(args: argparse.Namespace) -> int:
    overrides = {key: value for key, value in (("workspace", args.workspace), ("state_dir", args.state_dir)) if value}
    settings = load_settings(**overrides)  # resolves both paths, as the bridge itself will
    problem = workspace_problem(settings, own=own_paths(settings, config_path(os.environ)))
    if problem is not None:
        raise CliError(f"{problem} (or pass --workspace)")
    entry = desktop_entry(args.name, settings.workspace, settings.state_dir, config_path(os.environ))
    print(json.dumps(entry, indent=2))
    return 0
