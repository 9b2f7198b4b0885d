"""Launch a stdio child: `prepare_launch` wraps its argv in the sandbox backend that works here.

The impure module of the package (with `placeholders`, `gate` and `leftovers`): it reads the bridge's
environment, probes the backend, creates the state dir (a mask can only hide what exists), the
server's private home, the seccomp program file and on Linux the placeholders (recorded in this
bridge's ledger), the gate's fds and a root bridge's pids cgroup, counts the placeholder mount
points children hold, and on macOS creates the child's private temp dir.
`finish_launch` undoes what a launch left on disk once the child ended; what a bridge that died
left is swept at the next start (`leftovers.py`, which also makes and removes the pids cgroups).

On Linux the spawn is bwrap itself, held by a `Gate` (`gate.py`): the caller spawns with
`pass_fds=launch.pass_fds` and then calls `launch.gate.release(pid)` (in a thread), which sets the
child's limits and, for a root bridge, whose children are host uid 0 and exempt from RLIMIT_NPROC,
moves it into a `pids` cgroup made here, before bwrap forks the command.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sandbox.bubblewrap import PROXY_PORT, Forwarder, bwrap_argv
from sandbox.command import CommandNotFound, resolve_command
from sandbox.environment import DEFAULT_PATH, TRUST, child_environment
from sandbox.errors import InvalidWorkspace, NotRunnable, SandboxUnavailable
from sandbox.gate import Gate, open_gate
from sandbox.homes import EMPTY_DIR, EMPTY_FILE, default_homes_dir, ensure_home, home_environment, home_path, real_home
from sandbox.leftovers import make_cgroup, pids_cgroup_base, remove_cgroup
from sandbox.limits import Limits
from sandbox.network import NetworkSetting, effective_network, is_package_launcher, normalize_hosts, registry_hosts
from sandbox.placeholders import Ledger, guarded_paths, ledger_for
from sandbox.policy import Policy, build_policy, hidden_by
from sandbox.probe import Backend, select_backend
from sandbox.programs import granted, inside_writable, program_chain, reached_through
from sandbox.proxy import ProxyRoute, loopback_route, route_for
from sandbox.repos import SCAN_MAX_DIRS, new_git_dirs
from sandbox.seatbelt import sandbox_exec_argv
from sandbox.seccomp import filter_program

__all__ = [
    "CommandNotFound", "InvalidWorkspace", "Launch", "NotRunnable", "Plan", "SandboxConfig",
    "SandboxUnavailable", "check_runnable", "finish_launch", "new_repositories", "plan_launch",
    "prepare_launch", "probe",
]  # fmt: skip

log = logging.getLogger("mcp_bridge.sandbox")

CHILD_TMP_LINUX = "/tmp"  # bwrap mounts a private tmpfs there
CHILD_TMP_PARENT_DARWIN = "/private/tmp"
FORWARDER = Path(__file__).with_name("forwarder.py")
PROXY_ENV_NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy",
                   "npm_config_https_proxy", "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY")  # fmt: skip


@dataclass(frozen=True)
class SandboxConfig:
    """Plain values the sandbox needs, taken from `config.Settings` by the caller.

    `secret_paths`: more files or dirs children must not read, beside the state dir (e.g. the
    legacy registry inside the workspace, the bridge's config file). `homes_dir`: where private
    homes live (default `$XDG_DATA_HOME/mcp-bridge/homes`). `proxy_dir`: where the filtering
    proxy's sockets go (default `/tmp/mcp-bridge-<uid>`; keep it short, socket paths are capped).
    `pids_cgroup`: a root bridge enforces `limits.processes` with a pids cgroup per child (the
    kernel exempts host uid 0 from RLIMIT_NPROC); joining one waits ~10 ms on cgroup v1, which the
    gate overlaps with bwrap's setup. `own_paths`: the bridge's own code, interpreter and venv,
    and its checkout: read-only inside a writable root, and no writable root may lie inside one.
    `scan_max_dirs`: most folders a writable root may hold (its nested repositories are all found
    and kept read-only; a root past the bound is refused). `child_writable`: every folder some
    server's child may write besides the workspace (each config server's `write_paths`): a
    program chain that passes through one grants nothing, whichever server runs it.
    """

    backend: Literal["auto", "bubblewrap", "seatbelt", "none"]
    workspace: Path
    state_dir: Path
    network: NetworkSetting
    child_env_prefixes: tuple[str, ...] = ()
    secret_paths: tuple[Path, ...] = ()
    homes_dir: Path | None = None
    proxy_dir: Path | None = None
    limits: Limits = field(default_factory=Limits)
    pids_cgroup: bool = True
    own_paths: tuple[Path, ...] = ()
    scan_max_dirs: int = SCAN_MAX_DIRS
    child_writable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """What a launch would be, derived without touching the disk: for `servers show` and add time.

    `problem` says why the command cannot start in the sandbox (the bridge's `spawn_failed`).
    """

    executable: str
    policy: Policy
    backend: str
    network: NetworkSetting
    home: Path
    problem: str | None


@dataclass(frozen=True)
class Launch:
    """What to spawn: an absolute command, its args, the full child environment and cwd.

    `proxy`: the route the bridge's `FilteringProxy.listen` must serve before the spawn.
    `gate`: on Linux, spawn with `pass_fds`, then `gate.release(pid)`; the child runs only then.
    `placeholders`, `cleanup_paths`: what `finish_launch` removes when the child has ended.
    """

    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    backend: str = "none"
    cleanup_paths: tuple[Path, ...] = field(default=())
    policy: Policy | None = None
    proxy: ProxyRoute | None = None
    placeholders: tuple[Path, ...] = ()
    limits: Limits | None = None
    started: float = 0.0  # monotonic; proxy denials since then are this child's
    cgroup: Path | None = None  # a root bridge's pids cgroup for this child
    ledger: Ledger | None = None  # where a Linux launch recorded its placeholders and mounts
    gate: Gate | None = None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return self.gate.child_fds if self.gate is not None else ()


def prepare_launch(
    command: str,
    args: list[str],
    *,
    cwd: Path,
    server_env: dict[str, str],
    network: NetworkSetting | None,
    write_paths: tuple[str, ...],
    config: SandboxConfig,
    server_name: str | None = None,
    read_paths: tuple[str, ...] = (),
    git_write_paths: tuple[str, ...] = (),
) -> Launch:
    """Wrap `command args` for the configured backend.

    Raises `SandboxUnavailable` (no backend works; says how to install one), `InvalidWorkspace`
    (a subclass: the workspace or a write path would expose a secret), `CommandNotFound`
    (a bare command name not found on the child's PATH) and `NotRunnable` (a subclass: the
    command cannot start inside the sandbox, e.g. its interpreter lies in the hidden home).
    """
    as_root = os.geteuid() == 0
    backend = _backend(config, as_root)
    home = real_home()
    if backend.name == "none":
        log.warning(
            "stdio child %s runs WITHOUT a sandbox (MCP_SANDBOX=none): it can read and write "
            "everything the bridge can",
            command,
        )
        roots = (config.workspace, *(Path(p).expanduser() for p in write_paths))
        env = _environment(config, home, roots, server_env, {})(tmpdir=tempfile.gettempdir())
        return Launch(_absolute(command, env["PATH"]), list(args), env, str(cwd), backend="none")

    # A mask hides only what exists: a state dir created after the spawn would be readable.
    config.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    homes_dir = config.homes_dir or default_homes_dir(dict(os.environ), home)
    private_home = ensure_home(homes_dir, _server_key(server_name, command, args))
    proxy_dir = _proxy_dir(config) if backend.name == "bubblewrap" else None
    ledger = ledger_for(homes_dir) if backend.name == "bubblewrap" else None
    # Under the ledger's lock, a sweep by another bridge cannot remove what this plan finds present.
    with _held_lock, ledger.locked() if ledger else contextlib.nullcontext():
        plan = plan_launch(
            command, args, cwd=cwd, server_env=server_env, network=network, write_paths=write_paths,
            config=config, server_name=server_name, read_paths=read_paths, git_write_paths=git_write_paths,
        )  # fmt: skip
        if plan.problem is not None:
            raise NotRunnable(plan.problem)
        policy = plan.policy
        for holder in policy.placeholders:
            _held[holder.path] = _held.get(holder.path, 0) + 1
        if ledger is not None:
            ledger.hold(policy.placeholders, guarded_paths(policy))
    held = tuple(h.path for h in policy.placeholders)
    proxy = route_for(proxy_dir, policy.allowed_hosts) if policy.proxy_socket and proxy_dir else None
    fixed = home_environment(private_home) | _proxy_environment(policy)
    make_env = _environment(config, private_home, policy.writable, server_env, fixed)
    started = time.monotonic()
    if backend.name == "bubblewrap":
        env = make_env(tmpdir=CHILD_TMP_LINUX)
        processes = config.limits.processes if as_root and config.pids_cgroup else None
        base = pids_cgroup_base() if processes else None
        cgroup: Path | None = None
        try:
            cgroup = make_cgroup(base, processes) if base and processes else None
            gate = open_gate(_seccomp_file(homes_dir), config.limits, cgroup)
        except (OSError, SandboxUnavailable):  # undo what is held so far: placeholders, ledger, cgroup
            finish_launch(Launch("", [], {}, str(cwd), policy=policy, placeholders=held, ledger=ledger, cgroup=cgroup))
            raise
        argv = bwrap_argv(
            policy, [plan.executable, *args], cwd=cwd, bwrap=backend.tool, seccomp_fd=gate.seccomp_fd,
            gate_fds=gate.bwrap_fds, forwarder=_forwarder() if proxy else None,
        )  # fmt: skip
        return Launch(
            argv[0], argv[1:], env, str(cwd), backend=backend.name, policy=policy, proxy=proxy,
            placeholders=held, limits=config.limits, started=started, cgroup=cgroup, ledger=ledger, gate=gate,
            cleanup_paths=(cgroup,) if cgroup else (),  # a bridge that only rmtree()s still frees it
        )  # fmt: skip

    # The child reaches the proxy on a loopback port of its list's own, bound now (see loopback_route).
    route = loopback_route(_proxy_dir_path(config), policy.allowed_hosts) if policy.network == "proxy" else None
    tmpdir = Path(os.path.realpath(tempfile.mkdtemp(prefix="mcp-child-", dir=CHILD_TMP_PARENT_DARWIN)))
    argv = sandbox_exec_argv(  # the limits through limits_guard.py (seatbelt.py says how)
        policy, [plan.executable, *args], tmpdir=tmpdir, proxy_port=route.port if route else None,
        limits=config.limits, python=os.path.realpath(sys.executable),  # not /usr/bin/python3: a CLT stub on macOS
    )  # fmt: skip
    env = make_env(tmpdir=str(tmpdir), fixed=home_environment(private_home) | _proxy_environment(policy, route))
    return Launch(
        argv[0], argv[1:], env, str(cwd), backend=backend.name, cleanup_paths=(tmpdir,),
        policy=policy, proxy=route, placeholders=held, limits=config.limits, started=started,
    )  # fmt: skip


def plan_launch(
    command: str,
    args: list[str],
    *,
    cwd: Path,
    server_env: dict[str, str],
    network: NetworkSetting | None,
    write_paths: tuple[str, ...],
    config: SandboxConfig,
    server_name: str | None = None,
    read_paths: tuple[str, ...] = (),
    git_write_paths: tuple[str, ...] = (),
) -> Plan:
    """The launch `prepare_launch` would make, without creating anything (raises as it does).

    Placeholders other running children hold count as placeholders (`_held`; read under the
    lock `prepare_launch` holds, or racily for a display).
    """
    as_root = os.geteuid() == 0
    backend = _backend(config, as_root)
    home = real_home()
    return _plan(
        command, args, cwd=cwd, server_env=server_env, network=network, write_paths=write_paths,
        config=config, server_name=server_name, read_paths=read_paths,
        git_write_paths=git_write_paths, backend=backend, as_root=as_root, home=home,
        proxy_dir=_proxy_dir_path(config), held=frozenset(_held),
    )  # fmt: skip


def check_runnable(
    executable: str, policy: Policy, *, path_env: str = DEFAULT_PATH, writable: tuple[Path, ...] | None = None
) -> str | None:
    """Why `executable` cannot start under `policy`, or None: missing, not executable, no #!
    line, or a file of its chain (interpreter, venv base) hidden by the sandbox, including one
    that only a file in a `writable` root names (default: the policy's; see `programs.py`: such
    a chain grants nothing)."""
    chain = program_chain(executable, path_env)
    if chain.problem is not None:
        return chain.problem
    through = reached_through(chain.files, policy.writable if writable is None else writable)
    for path in chain.files:
        hider = hidden_by(policy, path, follow=False)  # each hop is a file of the chain
        if hider is not None and path in through:
            return (
                f"{path} (needed to run {executable}) lies in {hider}, which the sandbox hides from "
                f"children, and only {through[path]} names it, which lies in a folder children can "
                "write: a program there is given nothing outside the writable folders. Use a program "
                "installed outside them, or have the developer add its folder to the server's read_paths"
            )
        if hider is not None:
            return (
                f"{path} (needed to run {executable}) lies in {hider}, which the sandbox hides "
                "from children; add its folder to the server's read_paths"
            )
    return None


def finish_launch(launch: Launch) -> None:
    """After the child ended: remove the placeholders no other child holds, and the temp dirs.

    A placeholder is removed only while it is still the empty file or folder the launch made;
    removing one another child (of this bridge or another) still holds would detach that child's
    read-only mount. The ledger knows both.
    """
    if launch.gate is not None:
        launch.gate.close()
    with _held_lock:
        for path in launch.placeholders:
            count = _held.get(path, 0) - 1
            if count > 0:
                _held[path] = count
            else:
                _held.pop(path, None)
        if launch.ledger is not None and launch.policy is not None:
            with launch.ledger.locked():
                launch.ledger.release(guarded_paths(launch.policy))
    if launch.cgroup is not None:
        remove_cgroup(launch.cgroup)
    for path in launch.cleanup_paths:
        if path != launch.cgroup:
            _remove_tree(path)


def new_repositories(launch: Launch) -> tuple[Path, ...]:
    """`.git` entries created under the writable roots while the child ran (`git init sub`).

    Mounts cannot stop them; the bridge reports them when the session ends. Bounded like the
    spawn-time scan (`SandboxConfig.scan_max_dirs` folders a root, at any depth).
    """
    if launch.policy is None:
        return ()
    held = frozenset(launch.placeholders)  # the launch's own empty `.git` mount points are no repository
    policy = launch.policy
    return tuple(p for p in new_git_dirs(policy.guarded_roots, policy.git_dirs, max_dirs=policy.scan_max_dirs) if p not in held)


def _plan(
    command: str,
    args: list[str],
    *,
    cwd: Path,
    server_env: dict[str, str],
    network: NetworkSetting | None,
    write_paths: tuple[str, ...],
    config: SandboxConfig,
    server_name: str | None,
    read_paths: tuple[str, ...],
    git_write_paths: tuple[str, ...],
    backend: Backend,
    as_root: bool,
    home: Path,
    proxy_dir: Path | None,
    held: frozenset[Path],
) -> Plan:
    platform: Literal["linux", "darwin"] = "darwin" if backend.name == "seatbelt" else "linux"
    path_env = _environment(config, home, (config.workspace,), server_env, {})(tmpdir="/tmp")["PATH"]
    executable = _absolute(command, path_env)
    homes_dir = config.homes_dir or default_homes_dir(dict(os.environ), home)
    private_home = home_path(homes_dir, _server_key(server_name, command, args))
    chain = program_chain(executable, path_env)
    writable = _child_writable(config, write_paths, homes_dir, platform)
    launcher = is_package_launcher(executable, args) and _installed_launcher(executable, chain.files, writable)
    setting = effective_network(network, config.network, launcher=launcher)
    mode, hosts = _network_mode(setting, home)
    forwarder = _forwarder() if mode == "proxy" and platform == "linux" else None
    program_files = (*granted(chain.files, writable), *(program_chain(forwarder.python, path_env).files if forwarder else ()))
    proxy_socket = route_for(proxy_dir, hosts).socket if mode == "proxy" and proxy_dir else None
    policy = build_policy(
        workspace=config.workspace, home=home, state_dir=config.state_dir, write_paths=write_paths,
        network=mode, as_root=as_root, platform=platform, secret_paths=config.secret_paths,
        private_home=private_home, homes_dir=homes_dir, read_paths=read_paths,
        git_write_paths=git_write_paths, program_files=program_files, allowed_hosts=hosts,
        proxy_socket=proxy_socket, empty_file=homes_dir / EMPTY_FILE, empty_dir=homes_dir / EMPTY_DIR,
        held=held, own_paths=config.own_paths, trust_paths=_trust_paths(server_env),
        scan_max_dirs=config.scan_max_dirs,
    )  # fmt: skip
    problem = check_runnable(executable, policy, path_env=path_env, writable=writable)
    if problem is None and hidden_by(policy, cwd) is not None:
        problem = f"the working directory {cwd} is hidden from children; use a folder in the workspace"
    return Plan(executable, policy, backend.name, setting, private_home, problem)


def _trust_paths(server_env: dict[str, str]) -> tuple[Path, ...]:
    """The CA files and folders the trust variables the child gets name (a TLS-inspecting network's
    bundle may sit in the hidden home)."""
    given = {**os.environ, **server_env}
    return tuple(Path(given[name]) for name in sorted(TRUST) if os.path.isabs(given.get(name, "")))


def _child_writable(
    config: SandboxConfig, write_paths: tuple[str, ...], homes_dir: Path, platform: Literal["linux", "darwin"]
) -> tuple[Path, ...]:
    """Every folder a child of any server may write: the workspace, write paths (this server's and
    every other's), all private homes, and on macOS the children's temp dirs (Linux ones are private)."""
    spelled = [config.workspace, *write_paths, *config.child_writable, homes_dir]
    if platform == "darwin":
        spelled.append(CHILD_TMP_PARENT_DARWIN)
    return tuple(dict.fromkeys(Path(os.path.realpath(Path(p).expanduser())) for p in spelled))


def _installed_launcher(executable: str, files: tuple[Path, ...], writable: tuple[Path, ...]) -> bool:
    """Whether a command named like a package launcher is the one installed: the program of that
    name on the bridge's own PATH (or beside its interpreter: uvx in its venv), with no file of its
    chain in a writable root. Any script can be named `npx`; only the real one gets registry network."""
    name = os.path.basename(executable)
    operator_path = os.pathsep.join((os.environ.get("PATH", DEFAULT_PATH), os.path.dirname(sys.executable)))
    installed = shutil.which(name, path=operator_path)
    if installed is None or os.path.realpath(installed) != os.path.realpath(executable):
        return False
    return not any(inside_writable(path, writable) for path in files)


def _network_mode(setting: NetworkSetting, home: Path) -> tuple[Literal["deny", "allow", "proxy"], tuple[str, ...]]:
    if setting == "registry":
        return "proxy", registry_hosts(dict(os.environ), home)
    if isinstance(setting, tuple):
        return "proxy", normalize_hosts(setting)
    return setting, ()


def _proxy_environment(policy: Policy, route: ProxyRoute | None = None) -> dict[str, str]:
    """HTTP(S)_PROXY for a proxied child: the in-namespace forwarder's port on Linux, the route's
    own loopback port on macOS (`route.port`)."""
    if policy.network != "proxy":
        return {}
    url = f"http://127.0.0.1:{route.port if route and route.port else PROXY_PORT}"
    return {name: url for name in PROXY_ENV_NAMES} | {"NO_PROXY": "", "no_proxy": ""}


@functools.cache
def _forwarder() -> Forwarder:
    """The system python when there is one (cheap to start, outside any home), else ours."""
    python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else os.path.realpath(sys.executable)
    return Forwarder(python=python, script=FORWARDER)


def _seccomp_file(homes_dir: Path) -> Path:
    """The filter as a file in the (hidden) homes dir, written once per process."""
    return _write_seccomp(homes_dir, filter_program())


@functools.cache
def _write_seccomp(homes_dir: Path, program: bytes) -> Path:
    path = homes_dir / f".seccomp-{os.uname().machine}.bpf"
    if not path.exists() or path.read_bytes() != program:
        partial = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")  # launches run in threads
        partial.write_bytes(program)
        partial.chmod(0o444)
        partial.replace(path)
    return path


def _proxy_dir_path(config: SandboxConfig) -> Path:
    return config.proxy_dir or Path(tempfile.gettempdir()) / f"mcp-bridge-{os.geteuid()}"


def _proxy_dir(config: SandboxConfig) -> Path:
    """The sockets' folder, 0700 and ours: in a shared /tmp someone else could have made it."""
    path = _proxy_dir_path(config)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.lstat(path)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise SandboxUnavailable(f"proxy socket folder {path} is not private to this user; remove it or set another")
    return path


def _server_key(server_name: str | None, command: str, args: list[str]) -> str:
    """The private home's key: the server's name; a nameless launch keys on its command line."""
    return server_name if server_name else "\0".join([command, *args])


def _backend(config: SandboxConfig, as_root: bool) -> Backend:
    return select_backend(
        config.backend,
        platform=sys.platform,
        path_env=os.environ.get("PATH", DEFAULT_PATH),
        workspace=config.workspace,
        as_root=as_root,
    )


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


def _environment(
    config: SandboxConfig,
    home: Path,
    write_roots: tuple[Path, ...],
    server_env: dict[str, str],
    fixed: dict[str, str],
) -> functools.partial[dict[str, str]]:
    """The child environment, waiting only for its temp dir."""
    return functools.partial(
        child_environment,
        dict(os.environ),
        home=home,
        write_roots=write_roots,
        prefixes=config.child_env_prefixes,
        server_env=server_env,
        fixed=fixed,
    )


def _absolute(command: str, path_env: str) -> str:
    """Absolute commands pass; a bare name is looked up on the child's (sanitised) PATH."""
    return resolve_command(command, path_env=path_env)


def _remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


_held: dict[Path, int] = {}  # placeholder path -> running children whose mounts hold it
_held_lock = threading.Lock()
