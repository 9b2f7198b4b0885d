"""Launch a stdio child: `prepare_launch` wraps its argv in the sandbox backend that works here.

The one impure module of the package: it reads the bridge's environment, probes the backend,
makes sure the state dir exists (a mask can only hide what exists), and on macOS creates the
child's private temp dir. The bridge spawns the returned `Launch` itself (`bridge.downstream.stdio`).
"""

from __future__ import annotations

import functools
import logging
import os
import pwd
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sandbox.bubblewrap import bwrap_argv
from sandbox.command import CommandNotFound, resolve_command
from sandbox.environment import DEFAULT_PATH, child_environment
from sandbox.errors import InvalidWorkspace, SandboxUnavailable
from sandbox.policy import build_policy
from sandbox.probe import select_backend
from sandbox.seatbelt import sandbox_exec_argv

__all__ = ["CommandNotFound", "InvalidWorkspace", "Launch", "SandboxConfig", "SandboxUnavailable", "prepare_launch", "probe"]

log = logging.getLogger("mcp_bridge.sandbox")

CHILD_TMP_LINUX = "/tmp"  # bwrap mounts a private tmpfs there
CHILD_TMP_PARENT_DARWIN = "/private/tmp"


@dataclass(frozen=True)
class SandboxConfig:
    """Plain values the sandbox needs, taken from `config.Settings` by the caller.

    `secret_paths`: more files or dirs children must not read, beside the state dir (e.g. the
    legacy registry inside the workspace).
    """

    backend: Literal["auto", "bubblewrap", "seatbelt", "none"]
    workspace: Path
    state_dir: Path
    network: Literal["deny", "allow"]
    child_env_prefixes: tuple[str, ...] = ()
    secret_paths: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Launch:
    """What to spawn: an absolute command, its args, the full child environment and cwd."""

    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    backend: str = "none"
    cleanup_paths: tuple[Path, ...] = field(default=())


def prepare_launch(
    command: str,
    args: list[str],
    *,
    cwd: Path,
    server_env: dict[str, str],
    network: Literal["deny", "allow"] | None,
    write_paths: tuple[str, ...],
    config: SandboxConfig,
) -> Launch:
    """Wrap `command args` for the configured backend.

    Raises `SandboxUnavailable` (no backend works; says how to install one), `InvalidWorkspace`
    (a subclass: the workspace or a write path would expose a secret) and `CommandNotFound`
    (a bare command name not found on the child's PATH).
    """
    as_root = os.geteuid() == 0
    backend = select_backend(
        config.backend,
        platform=sys.platform,
        path_env=os.environ.get("PATH", DEFAULT_PATH),
        workspace=config.workspace,
        as_root=as_root,
    )
    home = _home()
    if backend.name == "none":
        log.warning(
            "stdio child %s runs WITHOUT a sandbox (MCP_SANDBOX=none): it can read and write "
            "everything the bridge can",
            command,
        )
        roots = (config.workspace, *(Path(p).expanduser() for p in write_paths))
        env = _environment(config, home, roots, server_env)(tmpdir=tempfile.gettempdir())
        return Launch(_absolute(command, env["PATH"]), list(args), env, str(cwd), backend="none")

    # A mask hides only what exists: a state dir created after the spawn would be readable.
    config.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    policy = build_policy(
        workspace=config.workspace,
        home=home,
        state_dir=config.state_dir,
        write_paths=write_paths,
        network=network or config.network,
        as_root=as_root,
        platform="darwin" if backend.name == "seatbelt" else "linux",
        secret_paths=config.secret_paths,
    )
    make_env = _environment(config, home, (policy.workspace, *policy.write_roots), server_env)
    if backend.name == "bubblewrap":
        env = make_env(tmpdir=CHILD_TMP_LINUX)
        argv = bwrap_argv(policy, [_absolute(command, env["PATH"]), *args], cwd=cwd, bwrap=backend.tool)
        return Launch(argv[0], argv[1:], env, str(cwd), backend=backend.name)

    executable = _absolute(command, make_env(tmpdir=CHILD_TMP_PARENT_DARWIN)["PATH"])
    tmpdir = Path(os.path.realpath(tempfile.mkdtemp(prefix="mcp-child-", dir=CHILD_TMP_PARENT_DARWIN)))
    argv = sandbox_exec_argv(policy, [executable, *args], tmpdir=tmpdir)
    env = make_env(tmpdir=str(tmpdir))
    return Launch(argv[0], argv[1:], env, str(cwd), backend=backend.name, cleanup_paths=(tmpdir,))


def probe(config: SandboxConfig) -> SandboxUnavailable | None:
    """Probe the backend now, once per process (the result is cached), so that no spawn waits for
    it on the event loop; the problem, if no backend works."""
    try:
        select_backend(
            config.backend,
            platform=sys.platform,
            path_env=os.environ.get("PATH", DEFAULT_PATH),
            workspace=config.workspace,
            as_root=os.geteuid() == 0,
        )
    except SandboxUnavailable as exc:
        return exc
    return None


def _home() -> Path:
    """The real home: $HOME when absolute, else the password database."""
    home = os.environ.get("HOME", "")
    return Path(home) if os.path.isabs(home) else Path(pwd.getpwuid(os.geteuid()).pw_dir)


def _environment(
    config: SandboxConfig, home: Path, write_roots: tuple[Path, ...], server_env: dict[str, str]
) -> functools.partial[dict[str, str]]:
    """The child environment, waiting only for its temp dir."""
    return functools.partial(
        child_environment,
        dict(os.environ),
        home=home,
        write_roots=write_roots,
        prefixes=config.child_env_prefixes,
        server_env=server_env,
    )


def _absolute(command: str, path_env: str) -> str:
    """Absolute commands pass; a bare name is looked up on the child's (sanitised) PATH."""
    return resolve_command(command, path_env=path_env)
