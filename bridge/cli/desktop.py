"""`mcp-bridge config claude-desktop`: a claude_desktop_config.json entry that starts this very bridge.

Claude Desktop starts servers from `/` with a bare environment, so everything in the entry is
absolute: the `mcp-bridge` script of the running install (or its Python with `-m bridge.cli`), the
workspace and the state directory; the CA variables of a TLS-inspected network are carried over. A bridge that `uvx` runs lives in uv's cache, which uv prunes
and rebuilds at will: its entry runs `uvx` again, from the source it was installed from.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

from bridge.cli.context import load_settings
from bridge.cli.errors import CliError, add_command
from bridge.settings import config_path, own_paths, workspace_problem
from sandbox.environment import TRUST


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


# uv's cache buckets that hold the environments `uvx` runs tools in (`uv cache prune` empties them).
UV_CACHE_BUCKETS = frozenset({"archive-v0", "builds-v0"})


def bridge_command() -> list[str]:
    """The installed `mcp-bridge` beside this Python; the interpreter itself where there is none;
    `uvx` when this Python is in uv's cache, whose paths do not last.

    `sys.executable` is taken as it is, not resolved: a venv's python is a symlink to one outside it.
    """
    if UV_CACHE_BUCKETS & set(Path(sys.prefix).parts):
        return uvx_command()
    python = Path(sys.executable).absolute()
    script = python.with_name("mcp-bridge")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), "-m", "bridge.cli"]


def uvx_command() -> list[str]:
    """`uvx --from SOURCE mcp-bridge`, SOURCE being what this bridge was installed from (its PEP 610
    `direct_url.json`: a folder, an archive, a VCS commit), else this very release from the index."""
    uvx = shutil.which("uvx")
    if uvx is None:
        raise CliError(
            f"this bridge runs from uv's cache ({sys.prefix}), which uv may prune, and uvx is not on PATH to "
            "start it again; install the bridge (`uv tool install ...` or `pip install ...`) and run this command from there"
        )
    return [str(Path(uvx).absolute()), "--from", install_source(), "mcp-bridge"]


def install_source() -> str:
    distribution = importlib.metadata.distribution("mcp-bridge")
    direct = json.loads(distribution.read_text("direct_url.json") or "null")
    if not isinstance(direct, dict) or not isinstance(url := direct.get("url"), str):
        return f"mcp-bridge=={distribution.version}"
    if "dir_info" in direct and url.startswith("file://"):
        return url2pathname(urlparse(url).path)
    if isinstance(vcs := direct.get("vcs_info"), dict):
        return f"{vcs.get('vcs', 'git')}+{url}@{vcs.get('commit_id', '')}".removesuffix("@")
    return url


def desktop_entry(name: str, workspace: Path, state_dir: Path, config: Path | None) -> dict[str, Any]:
    command, *args = bridge_command()
    env = {"MCP_WORKSPACE": str(workspace), "MCP_STATE_DIR": str(state_dir)}
    if config is not None:  # Claude Desktop starts the bridge from /, far from any checkout
        env["MCP_CONFIG"] = str(config)
    # Claude Desktop hands a server a bare environment: behind a TLS-inspecting network the bridge's
    # uvx and its npx/uvx servers (the sandbox passes these on) need the CAs this shell trusts.
    env |= {name: os.environ[name] for name in sorted(TRUST) if os.environ.get(name)}
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
