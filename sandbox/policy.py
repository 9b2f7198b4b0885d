"""What a stdio child may do, as plain data derived from the workspace, home, state dir and settings.

- Reads: everywhere except `masks` (credentials, keychains, browser profiles, shell history, the
  bridge's own state dir). Python/node/uvx servers need broad reads to start at all.
- Writes: only the workspace and the developer's capability `write_roots` (plus a private temp).
- `protected` paths inside the workspace stay read-only: the host runs them later (git hooks and
  config, editor tasks, direnv, agent configs).
- `pinned` directories lie between a write root and a mask or protected path. They must not be
  renamed: a renamed parent carries the mask away and a fresh, writable copy could take its place.

`build_policy` is the only function here that looks at the filesystem; `bubblewrap.py` and
`seatbelt.py` render a `Policy` without looking at anything.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sandbox.errors import InvalidWorkspace

Network = Literal["deny", "allow"]
Platform = Literal["linux", "darwin"]
MaskKind = Literal["dir", "file", "absent"]

HOME_SECRETS = (
    ".ssh", ".gnupg",
    ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".oci",
    ".netrc", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".git-credentials", ".config/gh",
    ".config/hub", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
    ".m2/settings.xml", ".gradle/gradle.properties", ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".password-store", ".config/op",
    ".pgpass", ".my.cnf", ".boto", ".s3cfg", ".config/rclone",
    ".claude", ".claude.json", ".codex", ".cursor", ".config/github-copilot",
    ".bash_history", ".zsh_history", ".python_history", ".node_repl_history", ".psql_history",
    ".mysql_history",
)  # fmt: skip
LINUX_HOME_SECRETS = (
    ".local/share/keyrings", ".mozilla", ".config/google-chrome", ".config/chromium",
    ".config/BraveSoftware", ".config/microsoft-edge", ".config/vivaldi",
)  # fmt: skip
DARWIN_HOME_SECRETS = (
    "Library/Keychains", "Library/Cookies", "Library/Safari", "Library/Mail", "Library/Messages",
    "Library/Application Support/Google/Chrome", "Library/Application Support/Chromium",
    "Library/Application Support/BraveSoftware", "Library/Application Support/Microsoft Edge",
    "Library/Application Support/Arc", "Library/Application Support/Firefox",
    "Library/Application Support/Vivaldi", "Library/Application Support/1Password",
    "Library/Application Support/com.apple.TCC",
    "Library/Group Containers/2BUA8C4S2C.com.1password",
)  # fmt: skip
DARWIN_SYSTEM_SECRETS = ("/Library/Keychains",)
# Linux as root: the child is uid 65534 inside but still host uid 0 for file permissions, so
# root-only files are readable unless masked.
ROOT_SYSTEM_SECRETS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/sudoers.d", "/etc/security/opasswd", "/etc/ssl/private", "/var/lib/docker",
)  # fmt: skip
ROOT_SYSTEM_GLOBS = ("/etc/ssh/ssh_host_*_key",)

# Inside the workspace, relative to it: kept read-only where they exist.
PROTECTED = (
    ".git/hooks", ".git/config", ".git/config.worktree", ".git/commondir", ".git/modules",
    ".gitmodules", ".vscode", ".idea", ".husky", ".claude", ".cursor", ".envrc", ".mcp.json",
)  # fmt: skip
# A `.git` *file* (worktree, submodule) names the git dir; rewritten, it points git at fresh hooks.
PROTECTED_IF_FILE = (".git",)


@dataclass(frozen=True)
class Mask:
    """A path the child must neither read nor write; `kind` decides how Linux hides it."""

    path: Path
    kind: MaskKind


@dataclass(frozen=True)
class Policy:
    """Everything a renderer needs; all paths absolute and canonical."""

    workspace: Path
    write_roots: tuple[Path, ...] = ()
    masks: tuple[Mask, ...] = ()
    protected: tuple[Path, ...] = ()
    pinned: tuple[Path, ...] = ()
    network: Network = "deny"
    as_root: bool = False
    run_binds: tuple[Path, ...] = ()


def build_policy(
    *,
    workspace: Path,
    home: Path,
    state_dir: Path,
    write_paths: tuple[str, ...],
    network: Network,
    as_root: bool,
    platform: Platform,
    secret_paths: tuple[Path, ...] = (),
) -> Policy:
    """Derive the policy, refusing roots that would expose a secret (raises `InvalidWorkspace`)."""
    home = Path(os.path.realpath(home))
    bridge_secrets = [Path(os.path.realpath(p)) for p in (state_dir, *secret_paths)]
    masks = _masks(_secret_candidates(home, as_root, platform) + bridge_secrets, platform)
    exempt = set(bridge_secrets)  # hidden again after the write binds, so a root may contain them

    ws = Path(os.path.realpath(workspace))
    if not ws.is_dir():
        raise InvalidWorkspace(f"workspace {ws} is not an existing directory")
    _refuse_unsafe_root(ws, "workspace", home, masks, exempt)
    roots = _write_roots(write_paths, ws, home, masks, exempt)

    protected = tuple(p for p in _protected(ws) if not _under_dir_mask(p, masks))
    present = [m.path for m in masks if m.kind != "absent"]
    return Policy(
        workspace=ws,
        write_roots=roots,
        masks=masks,
        protected=protected,
        pinned=_pinned((*protected, *present), (ws, *roots)),
        network=network,
        as_root=as_root,
        run_binds=_dns_binds() if platform == "linux" and network == "allow" else (),
    )


def _secret_candidates(home: Path, as_root: bool, platform: Platform) -> list[Path]:
    """Every path to hide, as spelled (not yet resolved)."""
    homes = [home]
    relative: tuple[str, ...]
    extra: list[Path] = []
    if platform == "darwin":
        relative = HOME_SECRETS + DARWIN_HOME_SECRETS
        extra += [Path(p) for p in DARWIN_SYSTEM_SECRETS]
    else:
        relative = HOME_SECRETS + LINUX_HOME_SECRETS
        if as_root:
            homes += sorted(p for p in Path("/home").glob("*") if p.is_dir())
            extra += [Path(p) for p in ROOT_SYSTEM_SECRETS]
            extra += [Path(p) for pattern in ROOT_SYSTEM_GLOBS for p in sorted(glob.glob(pattern))]
            if home != Path("/root"):
                extra.append(Path("/root"))
    return [h / r for h in homes for r in relative] + extra


def _masks(candidates: list[Path], platform: Platform) -> tuple[Mask, ...]:
    """Resolve, classify and de-duplicate; drop masks already hidden inside a masked dir.

    Linux hides the resolved target (a mount follows symlinks anyway); macOS also denies the path
    as spelled, since `/var` and `/private/var` are two spellings of one file.
    """
    found: dict[Path, Mask] = {}
    for spelled in candidates:
        real = Path(os.path.realpath(spelled))
        kind: MaskKind = "dir" if real.is_dir() else "file" if real.exists() else "absent"
        spellings = [real, spelled] if platform == "darwin" else [real]
        for path in spellings:
            found.setdefault(path, Mask(path, kind))
    masks = tuple(found.values())
    return tuple(m for m in masks if not _under_dir_mask(m.path, masks, strictly=True))


def _under_dir_mask(path: Path, masks: tuple[Mask, ...], *, strictly: bool = False) -> bool:
    return any(
        m.kind == "dir" and path.is_relative_to(m.path) and not (strictly and path == m.path) for m in masks
    )


def _refuse_unsafe_root(
    root: Path, what: str, home: Path, masks: tuple[Mask, ...], exempt: set[Path]
) -> None:
    """A writable root must not be `/`, home or above it, or inside/around a secret."""
    if root == Path("/"):
        raise InvalidWorkspace(f"{what} is the filesystem root /; use a project folder instead")
    if home.is_relative_to(root):
        raise InvalidWorkspace(
            f"{what} {root} is the home folder or contains it; use a project folder instead"
        )
    for mask in masks:
        if root.is_relative_to(mask.path):
            raise InvalidWorkspace(f"{what} {root} lies inside {mask.path}, which children may not read")
        if mask.path.is_relative_to(root) and mask.path not in exempt:
            raise InvalidWorkspace(f"{what} {root} contains {mask.path}, which children may not read")


def _write_roots(
    write_paths: tuple[str, ...], ws: Path, home: Path, masks: tuple[Mask, ...], exempt: set[Path]
) -> tuple[Path, ...]:
    roots: list[Path] = []
    for raw in write_paths:
        spelled = Path(raw).expanduser()
        if not spelled.is_absolute():
            raise InvalidWorkspace(f"write path {raw!r} must be absolute")
        root = Path(os.path.realpath(spelled))
        if not root.exists():
            raise InvalidWorkspace(f"write path {root} does not exist; create it before starting the server")
        _refuse_unsafe_root(root, "write path", home, masks, exempt)
        if root != ws and root not in roots:
            roots.append(root)
    return tuple(roots)


def _protected(ws: Path) -> list[Path]:
    """Existing protected paths; a symlink on the way cannot be kept read-only, so refuse it."""
    found = []
    for name in PROTECTED + PROTECTED_IF_FILE:
        path = ws / name
        if not os.path.lexists(path):
            continue
        _refuse_symlinks(ws, path)
        if name not in PROTECTED_IF_FILE or path.is_file():
            found.append(path)
    return found


def _refuse_symlinks(ws: Path, path: Path) -> None:
    current = ws
    for part in path.relative_to(ws).parts:
        current = current / part
        if current.is_symlink():
            raise InvalidWorkspace(
                f"{current} is a symlink; the sandbox cannot keep it read-only. "
                "Replace it with a real file or folder, or choose another workspace"
            )


def _pinned(targets: tuple[Path, ...], roots: tuple[Path, ...]) -> tuple[Path, ...]:
    """Directories strictly between a write root and a target, parents first."""
    pins: set[Path] = set()
    for target in targets:
        for root in roots:
            if target != root and target.is_relative_to(root):
                pins.update(p for p in target.parents if p != root and p.is_relative_to(root))
    return tuple(sorted(pins, key=lambda p: (len(p.parts), str(p))))


def _dns_binds() -> tuple[Path, ...]:
    """`/run` is a private tmpfs; re-expose only the file resolv.conf points at, never its dir."""
    resolv = Path(os.path.realpath("/etc/resolv.conf"))
    return (resolv,) if resolv.is_relative_to("/run") and resolv.is_file() else ()
