"""What a stdio child may do, as plain data derived from the workspace, home, state dir and settings.

- Reads: system folders, minus `masks` (credentials, keychains, the bridge's state dir). The real
  home and the folder of private homes are `hidden` (an empty read-only tmpfs on Linux), except
  `exposed` trees: the command's interpreter chain and install trees, the usual tool folders that
  hold programs (nvm, pyenv, uv, pipx, cargo, bun, deno), and the developer's `read_paths`.
- Writes: the workspace, the server's private `home`, the developer's `write_roots`, a private temp.
- Inside every writable root but the private home, the git dirs (the root's and nested ones) and
  the root's editor, agent and tool config paths are read-only: the host runs them later.
  Existing ones are `protected`; absent ones get a read-only `placeholders` mount point, so they
  cannot be created either (the launch removes the mount points when the child ends).
- The bridge's `own` code, interpreter and venv, and the checkout it runs from are read-only where
  a writable root holds them (the next start would run what a child wrote there); a writable root
  inside one of them is refused.
- `pinned` directories lie between a write root and a mask or protected path. They must not be
  renamed: a renamed parent carries the mask away and a fresh, writable copy could take its place.
- Network: `deny`, `allow`, or `proxy` (only `allowed_hosts`, through the bridge's filtering proxy).

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
from sandbox.programs import install_tree
from sandbox.repos import SCAN_MAX_DIRS, git_dirs, scan_roots

Network = Literal["deny", "allow", "proxy"]
Platform = Literal["linux", "darwin"]
MaskKind = Literal["dir", "file", "absent"]
PlaceholderKind = Literal["dir", "file"]

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
PRIVATE_MOUNTS = (Path("/tmp"), Path("/run"))  # a private tmpfs inside the Linux sandbox
SCAN_REUSE_S = 2.0  # a burst of spawns in one workspace shares one nested-repository scan

# At each writable root: run or read later by the host's git, editors, agents and tools. The kind is
# what a placeholder for an absent one is: an empty dir where the name is a folder, else an empty
# file (an empty .gitattributes, .env or .npmrc means nothing to the tools that read them).
ROOT_GUARDED: dict[str, PlaceholderKind] = {
    ".git": "dir",  # empty: the host's git ignores it and finds a parent repository as before
    ".vscode": "dir", ".idea": "dir", ".claude": "dir", ".cursor": "dir", ".husky": "dir",
    ".cargo": "dir", "tool_mcp": "dir",
    ".envrc": "file", ".mcp.json": "file", ".env": "file", ".npmrc": "file", ".yarnrc": "file",
    ".yarnrc.yml": "file", ".yarnrc.yaml": "file", ".gitattributes": "file", ".gitmodules": "file",
}  # fmt: skip
# Under the real home: folders of programs, not secrets, exposed read-only when they pass checks.
HOME_TOOL_DIRS = (
    ".nvm", ".pyenv", ".local/share/uv/tools", ".local/share/uv/python", ".local/share/pipx",
    ".local/pipx", ".local/bin", ".cargo/bin", ".bun/bin", ".deno/bin",
)  # fmt: skip


def within(path: Path, root: Path) -> bool:
    """`path.is_relative_to(root)` for canonical absolute paths, without pathlib's parsing cost
    (policy building compares every mask with every root on every spawn)."""
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith("/") else r + "/")


@dataclass(frozen=True)
class Mask:
    """A path the child must neither read nor write; `kind` decides how Linux hides it."""

    path: Path
    kind: MaskKind


@dataclass(frozen=True)
class Placeholder:
    """An absent guarded path, held by a read-only mount point while the child runs."""

    path: Path
    kind: PlaceholderKind


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
    home: Path | None = None
    hidden: tuple[Path, ...] = ()
    exposed: tuple[Path, ...] = ()
    placeholders: tuple[Placeholder, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    proxy_socket: Path | None = None
    empty_file: Path | None = None  # the source of file placeholders: reads give "", not EACCES
    empty_dir: Path | None = None  # the source of dir placeholders: one read-only bind, no remount
    git_dirs: frozenset[Path] = frozenset()  # every .git found at spawn (for `new_git_dirs`)
    scan_max_dirs: int = SCAN_MAX_DIRS  # the bound of that scan, and of the rescan when the child ends
    own: tuple[Path, ...] = ()  # the bridge's own code and venv inside a writable root: read-only

    @property
    def writable(self) -> tuple[Path, ...]:
        """Every writable root, the private home last."""
        return (self.workspace, *self.write_roots, *((self.home,) if self.home else ()))

    @property
    def guarded_roots(self) -> tuple[Path, ...]:
        """The writable roots whose git dirs and config paths the host trusts."""
        return (self.workspace, *self.write_roots)


def hidden_by(policy: Policy, path: Path, *, follow: bool = True) -> Path | None:
    """The mask or hidden tree that keeps `path` out of the child's sight, or None if visible.

    `follow=False` asks about a symlink itself (a hop of a program chain), not its target.
    """
    real = Path(os.path.realpath(path)) if follow else Path(os.path.realpath(path.parent)) / path.name
    for mask in policy.masks:
        if mask.kind != "absent" and within(real, mask.path):
            return mask.path
    shown = (*policy.writable, *policy.exposed)
    for tree in (*policy.hidden, *PRIVATE_MOUNTS):
        if within(real, tree) and not any(within(real, s) for s in shown):
            return tree
    return None




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
    private_home: Path | None = None,
    homes_dir: Path | None = None,
    read_paths: tuple[str, ...] = (),
    git_write_paths: tuple[str, ...] = (),
    program_files: tuple[Path, ...] = (),
    allowed_hosts: tuple[str, ...] = (),
    proxy_socket: Path | None = None,
    empty_file: Path | None = None,
    empty_dir: Path | None = None,
    held: frozenset[Path] = frozenset(),
    own_paths: tuple[Path, ...] = (),
    trust_paths: tuple[Path, ...] = (),
    scan_max_dirs: int = SCAN_MAX_DIRS,
) -> Policy:
    """Derive the policy, refusing roots that would expose a secret (raises `InvalidWorkspace`).

    `private_home` hides the real `home` (and `homes_dir`, the other servers' homes);
    `program_files` is the command's chain (see `programs.py`); `held` are placeholders another
    running child holds, which look present on disk but are still placeholders; `own_paths` are
    the bridge's own code and venv (read-only inside a writable root, never around one);
    `trust_paths` the CA files and folders the trust variables name (`SSL_CERT_FILE`...), shown
    read-only when the hidden home holds them;
    `scan_max_dirs` bounds the search for nested repositories (a root past it is refused).
    """
    home = Path(os.path.realpath(home))
    bridge_secrets = [Path(os.path.realpath(p)) for p in (state_dir, *secret_paths)]
    masks = _masks(_secret_candidates(home, as_root, platform) + bridge_secrets, platform)
    exempt = set(bridge_secrets)  # hidden again after the write binds, so a root may contain them

    ws = Path(os.path.realpath(workspace))
    if not ws.is_dir():
        raise InvalidWorkspace(f"workspace {ws} is not an existing directory")
    _refuse_unsafe_root(ws, "workspace", home, masks, exempt)
    roots = _write_roots(write_paths, ws, home, masks, exempt)
    own = _own_inside((ws, *roots), own_paths, masks)

    hidden: tuple[Path, ...] = ()
    exposed: tuple[Path, ...] = ()
    if private_home is not None:
        hidden = tuple(Path(os.path.realpath(p)) for p in (home, homes_dir) if p is not None)
        keep_out = (*bridge_secrets, *hidden)
        reads = _read_paths(read_paths, masks, keep_out)
        candidates = [install_tree(Path(f), home) for f in program_files]
        candidates += [home / name for name in HOME_TOOL_DIRS]
        candidates += list(trust_paths)
        exposed = _exposures(candidates, reads, hidden, masks, keep_out)

    git_write = {Path(os.path.realpath(p)) for p in git_write_paths}
    protected, placeholders, found = _guarded((ws, *roots), git_write, held, scan_max_dirs)
    protected = tuple(p for p in protected if not _under_dir_mask(p, masks))
    present = [m.path for m in masks if m.kind != "absent"]
    return Policy(
        workspace=ws,
        write_roots=roots,
        masks=masks,
        protected=protected,
        pinned=_pinned((*protected, *own, *(p.path for p in placeholders), *present), (ws, *roots)),
        network=network,
        as_root=as_root,
        run_binds=_dns_binds() if platform == "linux" and network == "allow" else (),
        home=Path(os.path.realpath(private_home)) if private_home is not None else None,
        hidden=hidden,
        exposed=exposed,
        placeholders=placeholders,
        allowed_hosts=allowed_hosts if network == "proxy" else (),
        proxy_socket=proxy_socket if network == "proxy" else None,
        empty_file=empty_file,
        empty_dir=empty_dir,
        git_dirs=found,
        scan_max_dirs=scan_max_dirs,
        own=own,
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
    dirs = tuple(m for m in masks if m.kind == "dir")  # only these can hold another mask
    return tuple(m for m in masks if not _under_dir_mask(m.path, dirs, strictly=True))


def _under_dir_mask(path: Path, masks: tuple[Mask, ...], *, strictly: bool = False) -> bool:
    return any(
        m.kind == "dir" and within(path, m.path) and not (strictly and path == m.path) for m in masks
    )


def _refuse_unsafe_root(
    root: Path, what: str, home: Path, masks: tuple[Mask, ...], exempt: set[Path]
) -> None:
    """A writable root must not be `/`, home or above it, or inside/around a secret."""
    if root == Path("/"):
        raise InvalidWorkspace(f"{what} is the filesystem root /; use a project folder instead")
    if within(home, root):
        raise InvalidWorkspace(
            f"{what} {root} is the home folder or contains it; use a project folder instead"
        )
    for mask in masks:
        if within(root, mask.path):
            raise InvalidWorkspace(f"{what} {root} lies inside {mask.path}, which children may not read")
        if within(mask.path, root) and mask.path not in exempt:
            raise InvalidWorkspace(f"{what} {root} contains {mask.path}, which children may not read")


def _own_inside(roots: tuple[Path, ...], own_paths: tuple[Path, ...], masks: tuple[Mask, ...]) -> tuple[Path, ...]:
    """The bridge's own paths that writable roots hold (kept read-only); a root inside one is refused."""
    inside: list[Path] = []
    for own in (Path(os.path.realpath(p)) for p in own_paths):
        for root in roots:
            what = "workspace" if root == roots[0] else "write path"
            if within(root, own):
                raise InvalidWorkspace(
                    f"{what} {root} lies inside the bridge's own {own}, which children may not write "
                    "(the next start would run what they wrote); use a folder outside it"
                )
            if within(own, root) and own.exists() and not _under_dir_mask(own, masks) and own not in inside:
                inside.append(own)
    return tuple(inside)


def _existing(raw: str, what: str) -> Path:
    """A configured path, canonical; it must be absolute and exist (a mount needs a target)."""
    spelled = Path(raw).expanduser()
    if not spelled.is_absolute():
        raise InvalidWorkspace(f"{what} {raw!r} must be absolute")
    path = Path(os.path.realpath(spelled))
    if not path.exists():
        raise InvalidWorkspace(f"{what} {path} does not exist; create it before starting the server")
    return path


def _write_roots(
    write_paths: tuple[str, ...], ws: Path, home: Path, masks: tuple[Mask, ...], exempt: set[Path]
) -> tuple[Path, ...]:
    roots: list[Path] = []
    for raw in write_paths:
        root = _existing(raw, "write path")
        _refuse_unsafe_root(root, "write path", home, masks, exempt)
        if root != ws and root not in roots:
            roots.append(root)
    return tuple(roots)


def _read_paths(read_paths: tuple[str, ...], masks: tuple[Mask, ...], keep_out: tuple[Path, ...]) -> list[Path]:
    """The developer's extra read paths: absolute, existing, and never around or inside a secret."""
    reads = []
    for raw in read_paths:
        path = _existing(raw, "read path")
        problem = _exposure_problem(path, masks, keep_out)
        if problem:
            raise InvalidWorkspace(f"read path {path} {problem}")
        reads.append(path)
    return reads


def _exposure_problem(tree: Path, masks: tuple[Mask, ...], keep_out: tuple[Path, ...]) -> str | None:
    for mask in masks:
        if within(tree, mask.path):
            return f"lies inside {mask.path}, which children may not read"
        if mask.kind != "absent" and within(mask.path, tree):
            return f"contains {mask.path}, which children may not read"
    for secret in keep_out:
        if within(secret, tree):
            return f"contains {secret}, which children may not read"
    return None


def _exposures(
    candidates: list[Path],
    reads: list[Path],
    hidden: tuple[Path, ...],
    masks: tuple[Mask, ...],
    keep_out: tuple[Path, ...],
) -> tuple[Path, ...]:
    """Hidden trees to show again read-only: only existing ones that hold no secret."""
    shown: list[Path] = list(reads)
    for candidate in candidates:
        if not os.path.lexists(candidate):
            continue
        tree = Path(os.path.realpath(candidate))
        if not any(within(tree, h) for h in hidden) or any(within(tree, s) for s in shown):
            continue  # visible anyway, or already shown
        if tree.exists() and _exposure_problem(tree, masks, keep_out) is None:
            shown = [s for s in shown if not within(s, tree)] + [tree]
    return tuple(sorted(shown))


def _guarded(
    roots: tuple[Path, ...], git_write: set[Path], held: frozenset[Path], max_dirs: int
) -> tuple[tuple[Path, ...], tuple[Placeholder, ...], frozenset[Path]]:
    """Read-only paths (existing) and placeholders (absent) at each root, plus nested git dirs.

    A symlink on the way cannot be kept read-only, so it is refused.
    """
    protected: list[Path] = []
    placeholders: list[Placeholder] = []
    for root in roots:
        for name, kind in ROOT_GUARDED.items():
            path = root / name
            if name == ".git" and root in git_write:
                continue
            if path in held or not os.path.lexists(path):
                placeholders.append(Placeholder(path, kind))
                continue
            _refuse_symlinks(root, path)
            protected += git_dirs(path) if name == ".git" else [path]
    root_gits = {root / ".git" for root in roots}
    # A reused scan may predate a root's `.git` (another bridge's placeholder, say): looked at afresh.
    found = scan_roots(roots, max_age=SCAN_REUSE_S, max_dirs=max_dirs) | {dot_git for dot_git in root_gits if os.path.lexists(dot_git)}
    for dot_git in sorted(found - root_gits):
        if dot_git.parent in git_write or dot_git in held:
            continue
        root = next(r for r in roots if within(dot_git, r))
        _refuse_symlinks(root, dot_git)
        protected += git_dirs(dot_git)
    inside = [p for p in dict.fromkeys(protected) if any(within(p, r) for r in roots)]
    return tuple(inside), tuple(placeholders), found


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
            if target != root and within(target, root):
                pins.update(p for p in target.parents if p != root and within(p, root))
    return tuple(sorted(pins, key=lambda p: (len(p.parts), str(p))))


def _dns_binds() -> tuple[Path, ...]:
    """`/run` is a private tmpfs; re-expose only the file resolv.conf points at, never its dir."""
    resolv = Path(os.path.realpath("/etc/resolv.conf"))
    return (resolv,) if within(resolv, "/run") and resolv.is_file() else ()
