"""Which backend runs here. `auto` fails closed; `none` is only ever chosen explicitly.

Each probe runs the real tool once per process (cached): a bwrap binary can be installed yet
unusable (user namespaces disabled, an unprivileged container), and sandbox-exec fails inside
another sandbox.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sandbox.bubblewrap import BWRAP, namespace_args, system_mount_args
from sandbox.environment import DEFAULT_PATH, sanitize_path
from sandbox.errors import SandboxUnavailable
from sandbox.seatbelt import SANDBOX_EXEC

BWRAP_FALLBACKS = (BWRAP, "/usr/local/bin/bwrap")
PROBE_SECONDS = 10
INSTALL_BWRAP = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
)
USERNS_HINT = (
    "it needs bubblewrap >= 0.8 (for --disable-userns) and user namespaces: check sysctl "
    "kernel.unprivileged_userns_clone (Debian) or kernel.apparmor_restrict_unprivileged_userns "
    "(Ubuntu), or run outside an unprivileged container"
)


@dataclass(frozen=True)
class Backend:
    """The chosen backend and the absolute path of its tool ("" for none)."""

    name: Literal["bubblewrap", "seatbelt", "none"]
    tool: str = ""


def select_backend(
    requested: Literal["auto", "bubblewrap", "seatbelt", "none"],
    *,
    platform: str,
    path_env: str,
    workspace: Path,
    as_root: bool,
) -> Backend:
    """Resolve the configured backend, or raise `SandboxUnavailable` saying how to get one."""
    if requested == "none":
        return Backend("none")
    if requested == "seatbelt" or (requested == "auto" and platform == "darwin"):
        return _seatbelt(platform)
    if requested == "bubblewrap" or (requested == "auto" and platform.startswith("linux")):
        return _bubblewrap(platform, path_env, workspace, as_root)
    raise SandboxUnavailable(
        f"no sandbox backend for platform {platform!r}: stdio servers need macOS (seatbelt) or "
        "Linux (bubblewrap); set MCP_SANDBOX=none only if you accept unsandboxed children"
    )


def _seatbelt(platform: str) -> Backend:
    if platform != "darwin":
        raise SandboxUnavailable(
            f"the seatbelt backend needs macOS (this is {platform}); on Linux {INSTALL_BWRAP} "
            "and set MCP_SANDBOX=auto or bubblewrap"
        )
    error = probe_seatbelt()
    if error:
        raise SandboxUnavailable(
            f"{SANDBOX_EXEC} cannot apply a profile here ({error}); it fails when the bridge "
            "itself runs inside a sandbox, so start the bridge outside one"
        )
    return Backend("seatbelt", SANDBOX_EXEC)


def _bubblewrap(platform: str, path_env: str, workspace: Path, as_root: bool) -> Backend:
    if not platform.startswith("linux"):
        raise SandboxUnavailable(f"the bubblewrap backend needs Linux (this is {platform})")
    bwrap = locate_bwrap(path_env, workspace)
    if bwrap is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed: {INSTALL_BWRAP}")
    error = probe_bubblewrap(bwrap, as_root)
    if error:
        raise SandboxUnavailable(f"{bwrap} cannot create a sandbox here ({error}); {USERNS_HINT}")
    return Backend("bubblewrap", bwrap)


def locate_bwrap(path_env: str, workspace: Path) -> str | None:
    """The system bwrap, else one on PATH outside the workspace (a child could plant one there)."""
    for candidate in BWRAP_FALLBACKS:
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("bwrap", path=sanitize_path(path_env, (workspace,)))


@functools.cache
def probe_bubblewrap(bwrap: str, as_root: bool) -> str | None:
    """None when bwrap runs `/bin/true` with the real isolation flags, else why not."""
    argv = [bwrap, *namespace_args(as_root=as_root, allow_network=False), *system_mount_args()]
    return _run_probe([*argv, "--", "/bin/true"])


@functools.cache
def probe_seatbelt() -> str | None:
    """None when sandbox-exec can apply a trivial profile (it cannot inside another sandbox)."""
    return _run_probe([SANDBOX_EXEC, "-p", "(version 1)(allow default)", "/usr/bin/true"])


def _run_probe(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(
            argv,
            env={"PATH": DEFAULT_PATH},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode == 0:
        return None
    return proc.stderr.decode(errors="replace").strip() or f"exit code {proc.returncode}"
