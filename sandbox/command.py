"""The one command resolver: how a command as a person or a config file spells it becomes the
absolute program the sandbox starts (the sandboxed child gets no PATH lookup of its own).

- an absolute path is taken as it is;
- a relative path with a slash is resolved against `base` (what a shell does from its current
  directory), and refused where there is no such directory to mean (a config file, a model);
- a bare name is looked up on `path_env`, as a host would.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path


class CommandNotFound(ValueError):
    """The command cannot be resolved to a program; the message says why and what to give instead."""


def resolve_command(command: str, *, path_env: str, base: Path | None = None) -> str:
    """The absolute path of `command` (not checked for existence when given absolute)."""
    if not command:
        raise CommandNotFound("command must be a non-empty string")
    if os.path.isabs(command):
        return command
    if os.sep in command:
        if base is None:
            raise CommandNotFound(f"command {command!r} is a relative path; give it as an absolute path")
        return os.path.abspath(base / command)
    found = shutil.which(command, path=path_env)
    if found is None:
        raise CommandNotFound(f"command {command!r} is not on PATH")
    return os.path.abspath(found)
