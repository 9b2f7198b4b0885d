"""What a command needs to run: every file `execve` touches, the install trees that hold them,
and whether it can start inside the sandbox at all.

The chain of a command is its symlink hops and final target, the interpreter its shebang names
(`/usr/bin/env node` looked up on the child's PATH), that interpreter's own chain, and a venv's
base interpreter (`home =` in `pyvenv.cfg`, itself part of the chain). The chain is derived once
per file version (cached on path, PATH, inode, mtime and mode), since every spawn of a server asks
again.

The rule (issue 27): nothing a child or the model can write decides a mount. A chain is followed
in order, and once it passes through a folder a child can write (the workspace, any server's
write paths, the private homes: a symlink, a script, a `pyvenv.cfg` there), every later file
outside those folders was named by something a child could have planted, so it grants nothing:
it is not exposed, and if the sandbox hides it the command is refused (`reached_through`,
`granted`) with the reason. A chain that leads out of a writable root to something children see
anyway (`/usr/bin/python3`) still runs.
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

MAX_HOPS = 40  # symlinks, as the kernel's ELOOP bound
MAX_INTERPRETERS = 4  # the kernel's binfmt recursion limit
BINARY_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


@dataclass(frozen=True)
class Chain:
    """The files a command's start reads, in order, or why it cannot start anywhere."""

    files: tuple[Path, ...]
    problem: str | None = None


def program_chain(executable: str, path_env: str) -> Chain:
    """The chain of an absolute executable (cached while the file is unchanged)."""
    try:
        st = os.stat(executable)
        stamp: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_mode)
    except OSError:
        stamp = None
    return _chain(executable, path_env, stamp)


@functools.lru_cache(maxsize=256)
def _chain(executable: str, path_env: str, stamp: tuple[int, int, int] | None) -> Chain:
    files: list[Path] = []
    current = executable
    for _ in range(MAX_INTERPRETERS + 1):
        real = _follow(Path(current), files)
        if not real.exists():
            return Chain(tuple(files), f"{current} does not exist")
        if not real.is_file():
            return Chain(tuple(files), f"{current} is not a regular file")
        if not os.access(real, os.X_OK):
            return Chain(tuple(files), f"{current} is not executable (chmod +x {current})")
        files += _venv_base(real)  # the cfg, then its `home`: named by the cfg
        try:
            words = _shebang(real)
        except OSError as exc:
            return Chain(tuple(files), f"{current} cannot be read: {exc.strerror}")
        if words is None:
            return Chain(
                tuple(files),
                f"{current} is neither a program nor a script with a #! line, so it cannot be "
                "executed; add a shebang (e.g. #!/usr/bin/env python3) or run it through its interpreter",
            )
        if not words:
            return Chain(tuple(files))
        interpreter = _interpreter(words, path_env)
        if interpreter is None:
            return Chain(tuple(files), f"{current} names interpreter {' '.join(words)!r}, which is not found")
        current = interpreter
    return Chain(tuple(files), f"{executable} nests interpreters deeper than the kernel allows")


def _follow(path: Path, files: list[Path]) -> Path:
    """Record each symlink hop and return the final target (absolute, unresolved parents kept)."""
    for _ in range(MAX_HOPS):
        files.append(path)
        if not path.is_symlink():
            break
        path = Path(os.path.normpath(path.parent / os.readlink(path)))
    real = Path(os.path.realpath(path))
    if real != files[-1]:
        files.append(real)
    return real


def _venv_base(real: Path) -> list[Path]:
    """A venv's python copied (not linked) from its base: the base's bin folder. Other programs
    in a venv's bin (uv, console scripts) do not need it; scripts reach it through their #!."""
    cfg = real.parent.parent / "pyvenv.cfg"
    if not real.name.startswith("python") or real.parent.name != "bin" or not cfg.is_file():
        return []
    for line in cfg.read_text(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and os.path.isabs(value.strip()):
            return [cfg, Path(value.strip())]
    return [cfg]


def _shebang(real: Path) -> list[str] | None:
    """[] for a binary, the #! words for a script, None for neither."""
    with open(real, "rb") as f:
        head = f.read(256)
    if head[:4] in BINARY_MAGIC:
        return []
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    return words or None


def _interpreter(words: list[str], path_env: str) -> str | None:
    """The absolute interpreter a #! line runs; `env NAME` is looked up on the child's PATH."""
    first = words[0]
    if os.path.basename(first) != "env":
        return first if os.path.isabs(first) else None
    names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    if not names:
        return None
    found = shutil.which(names[0], path=path_env)
    return os.path.abspath(found) if found else None


def reached_through(files: tuple[Path, ...], writable: tuple[Path, ...]) -> dict[Path, Path]:
    """The chain's files outside `writable` (canonical roots) that come after a file inside one,
    each with the last such file before it (what named it): something a child can write."""
    through: dict[Path, Path] = {}
    planted: Path | None = None
    for path in files:
        if inside_writable(path, writable):
            planted = path
        elif planted is not None:
            through.setdefault(path, planted)
    return through


def granted(files: tuple[Path, ...], writable: tuple[Path, ...]) -> tuple[Path, ...]:
    """The chain's files that may be exposed: those not reached through a writable root."""
    through = reached_through(files, writable)
    return tuple(path for path in files if path not in through)


def inside_writable(path: Path, writable: tuple[Path, ...]) -> bool:
    """Whether a chain file (a symlink hop too, judged where it lies) is in one of the `writable` roots."""
    return any(_located(path).is_relative_to(root) for root in writable)


def _located(path: Path) -> Path:
    """Where a chain file lies: its folder canonical, its own name kept (it may be a symlink)."""
    return Path(os.path.realpath(path.parent)) / path.name


def install_tree(path: Path, home: Path) -> Path:
    """The folder that holds a program: `<prefix>` for `<prefix>/bin/x`, else the file's folder.

    Never the home itself or above it: a program directly in the home exposes only itself.
    """
    folder = path if path.name == "bin" and not path.is_file() else path.parent
    for tree in (folder.parent if folder.name == "bin" else folder, folder):
        if not home.is_relative_to(tree):
            return tree
    return path
