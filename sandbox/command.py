"""The one command resolver: how a command as a person or a config file spells it becomes the
absolute program the sandbox starts (the sandboxed child gets no PATH lookup of its own).

- an absolute path is taken as it is;
- a relative path with a slash is resolved against `base` (what a shell does from its current
  directory), and refused where there is no such directory to mean (a config file, a model);
- a bare name is looked up on `path_env`, as a host would; when it is not found, the refusal names
  the folders searched and the close names found in them ("npxx": did you mean npx?).
"""

from __future__ import annotations

import difflib
import os
import shutil
from pathlib import Path

_SHOWN_FOLDERS = 12  # of PATH, in a refusal; the rest are counted


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
        raise CommandNotFound(f"command {command!r} is not on PATH: {_where_looked(command, path_env)}")
    return os.path.abspath(found)


def _where_looked(command: str, path_env: str) -> str:
    """The folders searched for `command`, and up to three programs in them with a close name."""
    folders = [folder for folder in dict.fromkeys(path_env.split(os.pathsep)) if folder]
    if not folders:
        return "PATH is empty"
    shown = ", ".join(folders[:_SHOWN_FOLDERS])
    more = f" and {len(folders) - _SHOWN_FOLDERS} more" if len(folders) > _SHOWN_FOLDERS else ""
    path = os.pathsep.join(folders)
    close = difflib.get_close_matches(command, _names(folders), n=9, cutoff=0.75)
    close = [name for name in close if shutil.which(name, path=path)]
    hint = f"; did you mean {', '.join(close[:3])}?" if close else ""
    return f"looked for {command!r} in {shown}{more}{hint}"


def _names(folders: list[str]) -> set[str]:
    names: set[str] = set()
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                names.update(entry.name for entry in entries)
        except OSError:  # a folder on PATH that is missing or unreadable is skipped, as a shell does
            continue
    return names
