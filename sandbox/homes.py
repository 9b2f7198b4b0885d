"""Private homes: each stdio server's own HOME, XDG folders and package caches.

A home lives in the bridge-managed `homes_dir` (never the real home, never the state dir), keeps
its caches across restarts so a launcher downloads a package once, and goes when the server is
removed (`remove_home`). Folder names come from server names, encoded so that no name can reach
outside `homes_dir`.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import shutil
from pathlib import Path

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
EMPTY_FILE = ".empty"  # in homes_dir: the read-only sources of file and dir placeholders
EMPTY_DIR = ".empty-dir"


def real_home() -> Path:
    """The real home: $HOME when absolute, else the password database."""
    home = os.environ.get("HOME", "")
    return Path(home) if os.path.isabs(home) else Path(pwd.getpwuid(os.geteuid()).pw_dir)


def default_homes_dir(environ: dict[str, str], real_home: Path) -> Path:
    """`$XDG_DATA_HOME/mcp-bridge/homes`: outside the state dir and hidden with the real home."""
    data = environ.get("XDG_DATA_HOME", "")
    base = Path(data) if os.path.isabs(data) else real_home / ".local" / "share"
    return base / "mcp-bridge" / "homes"


def home_folder_name(server_name: str) -> str:
    """The server name when it is a plain name, else a digest (names are not trusted paths)."""
    if SAFE_NAME.match(server_name) and ".." not in server_name:
        return server_name
    return "_" + hashlib.sha256(server_name.encode()).hexdigest()[:24]


def home_path(homes_dir: Path, server_name: str) -> Path:
    """Where the server's private home is (it may not exist yet)."""
    return homes_dir / home_folder_name(server_name)


def home_environment(home: Path) -> dict[str, str]:
    """HOME, the XDG folders and the package caches, all inside the private home."""
    cache = home / ".cache"
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(cache),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "npm_config_cache": str(home / ".npm"),
        "npm_config_update_notifier": "false",  # no extra registry call at every start
        "UV_CACHE_DIR": str(cache / "uv"),
        "PIP_CACHE_DIR": str(cache / "pip"),
    }


def ensure_home(homes_dir: Path, server_name: str) -> Path:
    """Create `homes_dir` (0700) with its empty placeholder sources, and the server's home."""
    homes_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    empty = homes_dir / EMPTY_FILE
    if not empty.exists():
        empty.touch(mode=0o444)
    (homes_dir / EMPTY_DIR).mkdir(mode=0o555, exist_ok=True)
    home = home_path(homes_dir, server_name)
    home.mkdir(exist_ok=True, mode=0o700)
    return Path(os.path.realpath(home))


def remove_home(homes_dir: Path, server_name: str) -> bool:
    """Delete a removed server's private home; False when it had none."""
    home = home_path(homes_dir, server_name)
    if not home.is_dir():
        return False
    shutil.rmtree(home)
    return True
