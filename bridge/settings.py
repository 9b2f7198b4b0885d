"""Settings: the only reader of the bridge's environment, and where the developer's servers are found.

`Settings` holds every operator setting (env vars prefixed `MCP_`), each with a default and bounds.
The developer's servers (`MCP_SERVERS`) live in a `config.py`-style file: `MCP_CONFIG` names it, or
the checkout's own `config.py` is used when the bridge runs from its checkout. State goes to
`MCP_STATE_DIR`, else the checkout's `work/`, else a per-user data folder; never site-packages.
"""

from __future__ import annotations

import difflib
import re
import runpy
import sys
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import platformdirs
from pydantic import (
    AnyHttpUrl,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

import sandbox
from bridge.errors import describe_validation
from bridge.models import ENV_NAME, NAME_PATTERN
from bridge.wording import quoted
from sandbox.limits import Limits
from sandbox.network import NetworkSetting, normalize_hosts

Transport = Literal["http", "stdio"]

HOST_PATTERN = re.compile(r"[A-Za-z0-9.*?-]+|\[[0-9A-Fa-f:.]+\]")
NETWORK_WORDS = ("deny", "allow", "registry")
MIB = 1 << 20
LIMIT_MINIMUMS = {"child_memory_mb": 64, "child_open_files": 64}


@cache
def checkout_root() -> Path | None:
    """The project checkout this package runs from (editable install, `server.py`), else None.

    Known by its `pyproject.toml` naming this project, never by the working directory: a folder a
    child can write must not be able to reconfigure the bridge.
    """
    root = Path(__file__).resolve().parents[1]
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("name") == "mcp-bridge" else None


def default_state_dir() -> Path:
    root = checkout_root()
    return root / "work" if root is not None else platformdirs.user_data_path("mcp-bridge")


def default_homes_dir() -> Path:
    """Beside the per-user state folder, never inside it: the state dir is masked from children."""
    return platformdirs.user_data_path("mcp-bridge-homes")


def parse_network(value: object) -> object:
    """`deny`, `allow`, `registry`, or a comma-separated list of host names (`*.example.com` allowed)."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in NETWORK_WORDS:
            return word
        value = [part for part in word.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        if not value:
            raise ValueError("must be deny, allow, registry or a comma-separated list of host names")
        return normalize_hosts([str(part) for part in value])
    return value


class SecretBinding(NamedTuple):
    """One `MCP_SECRET_ENV_ALLOW` entry: a variable and where its value may go.

    `NAME@https://host:port` binds it to that scheme, host (may use * wildcards) and port, for a
    header; `NAME@host` is short for `NAME@https://host:443`; `NAME@server:<name>` gives it to the
    environment of the stdio server registered under that name (`env_json`); a bare `NAME` (no
    binding) serves only the servers the operator registered (the developer's config, the CLI),
    never one the conversation added, which could name any URL or program.
    """

    name: str
    scheme: str | None = None
    host: str | None = None
    port: int | None = None
    server: str | None = None

    def __str__(self) -> str:
        if self.server is not None:
            return f"{self.name}@server:{self.server}"
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return self.name if host is None else f"{self.name}@{self.scheme}://{host}:{self.port}"


_FORMS = "NAME, NAME@host, NAME@https://host:port or NAME@server:<server name>"


def parse_allow(entry: str) -> SecretBinding:
    """`NAME`, `NAME@host`, `NAME@scheme://host[:port]` or `NAME@server:<name>`; ValueError when malformed."""
    name, at, target = entry.partition("@")
    if not ENV_NAME.fullmatch(name):
        raise ValueError(f"{entry!r} is not {_FORMS}")
    if not at:
        return SecretBinding(name)
    if target.startswith("server:"):
        server = target.removeprefix("server:")
        if not NAME_PATTERN.fullmatch(server):
            raise ValueError(f"{entry!r} names no valid server (letters, digits, _ and -, at most 64)")
        return SecretBinding(name, server=server)
    scheme, sep, rest = target.partition("://")
    if not sep:
        scheme, rest = "https", target
    if rest.startswith("["):  # an IPv6 literal: [::1]:8443
        end = rest.find("]") + 1
        host, colon, port = rest[:end], rest[end : end + 1], rest[end + 1 :]
    else:
        host, colon, port = rest.partition(":")
    if scheme not in ("http", "https") or not HOST_PATTERN.fullmatch(host) or (colon and (colon != ":" or not port.isdigit())):
        raise ValueError(f"{entry!r} is not {_FORMS} (host may use * wildcards)")
    number = int(port) if colon else (443 if scheme == "https" else 80)
    if not 0 < number < 65536:
        raise ValueError(f"{entry!r} names port {number}, outside 1-65535")
    return SecretBinding(name, scheme, host.lower().strip("[]").rstrip("."), number)


class Settings(BaseSettings):
    """Operator settings, read from `MCP_*` environment variables."""

    model_config = SettingsConfigDict(env_prefix="MCP_", extra="ignore", frozen=True)

    max_chars: int = Field(4000, ge=200, le=1_000_000, description="Character budget of every tool result.")
    timeout: float = Field(60.0, gt=0, le=3600, description="Seconds one downstream operation may take.")
    state_dir: Path = Field(default_factory=lambda: default_state_dir(), description="Runtime state: registry, logs.")
    workspace: Path = Field(default_factory=Path.cwd, description="The approved workspace for stdio children.")
    session_idle_s: float = Field(
        300.0, ge=0, le=86_400, description="Seconds an idle downstream session stays warm; 0 closes it after each call."
    )
    max_sessions: int = Field(16, ge=1, le=256, description="Most live downstream sessions at once.")
    backoff_after: int = Field(
        3, ge=1, le=100, description="Consecutive failures to start or connect before a server is held back."
    )
    backoff_max_s: float = Field(
        300.0, ge=0, le=86_400, description="Longest hold (it doubles from 5 s per failure); 0 turns back-off off."
    )
    audit_max_bytes: int = Field(
        5_000_000, ge=10_000, le=10**10, description="Size at which the audit log rotates."
    )
    audit_backups: int = Field(3, ge=0, le=100, description="Rotated audit files kept besides the current one.")
    allow_dynamic: bool = Field(True, description="Offer mcp_add_server and mcp_remove_server.")
    allowed_transports: Annotated[frozenset[Transport], NoDecode] = Field(
        frozenset({"http", "stdio"}), description="Kinds of downstream server that may be used."
    )
    sandbox: Literal["auto", "bubblewrap", "seatbelt", "none"] = Field("auto", description="Sandbox backend.")
    sandbox_network: Annotated[NetworkSetting, NoDecode] = Field(
        "deny",
        description="Network for stdio children: deny, allow, registry (npm and PyPI through the bridge's proxy) or "
        "a comma-separated host list; package launchers (npx, uvx, ...) get registry when it is deny.",
    )
    homes_dir: Path = Field(default_factory=default_homes_dir, description="Where each stdio server's private home lives.")
    proxy_dir: Path | None = Field(None, description="Folder of the filtering proxy's Unix sockets (default /tmp/mcp-bridge-<uid>).")
    child_memory_mb: int = Field(2048, ge=0, le=1_048_576, description="Address-space limit of one child, MiB; 0: none.")
    child_processes: int = Field(512, ge=0, le=1_000_000, description="Processes one child may run; 0: no limit.")
    child_file_mb: int = Field(1024, ge=0, le=1_048_576, description="Largest file one child may write, MiB; 0: none.")
    child_open_files: int = Field(4096, ge=0, le=1_048_576, description="Open files of one child; 0: inherited.")
    sandbox_scan_max_dirs: int = Field(
        20_000, ge=100, le=10_000_000,
        description="Most folders a writable root may hold: every git repository in it is found and kept read-only; "
        "a root with more is refused.",
    )
    sandbox_pids_cgroup: bool = Field(
        True, description="As root, enforce MCP_CHILD_PROCESSES with a pids cgroup (the kernel exempts uid 0 from RLIMIT_NPROC)."
    )
    start_timeout: float = Field(
        180.0, gt=0, le=3600, description="Seconds a start (spawn or connect, then initialize) may take: a first npx download."
    )
    search_wait_s: float = Field(
        10.0, gt=0, le=3600, description="Seconds a search waits for servers never indexed before it answers without them."
    )
    max_list_pages: int = Field(100, ge=1, le=100_000, description="Most pages of one downstream tools/list.")
    max_tools: int = Field(5000, ge=1, le=1_000_000, description="Most tools one downstream listing may hold.")
    child_env_prefixes: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="Bridge env vars with these name prefixes are passed to stdio children."
    )
    secret_env_allow: Annotated[tuple[str, ...], NoDecode] = Field(
        (),
        description="Env vars a header or env_json may name as ${env:NAME}: NAME, NAME@host (host may use * wildcards) "
        "or NAME@server:<name> (the env of that stdio server).",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info",
        description="The bridge's own log lines on stderr from this level; debug also shows its dependencies' "
        "(httpx, the SDK, FastMCP, uvicorn), which log from WARNING otherwise.",
    )
    tool_shape: Literal["auto", "chatgpt", "standard"] = Field(
        "auto", description="tools/list shape: per client (auto), always ChatGPT's, or always strict 2020-12."
    )
    auth_token: SecretStr | None = Field(
        None, description="HTTP mode: the bearer token every request must carry; enables a non-loopback bind."
    )
    allowed_hosts: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="HTTP mode: Host names accepted besides loopback (a tunnel's), fnmatch patterns allowed."
    )
    allowed_origins: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="HTTP mode: browser Origins accepted besides same-origin and loopback."
    )
    auth: Literal["auto", "oauth", "token", "none"] = Field(
        "auto",
        description="HTTP mode: how requests authenticate. auto: token when MCP_AUTH_TOKEN is set, the built-in "
        "OAuth server when a non-loopback host is allowed, else none (loopback clients only).",
    )
    public_url: AnyHttpUrl | None = Field(
        None,
        description="HTTP mode: the origin clients reach (https://<tunnel host>); the OAuth issuer. Default: "
        "https:// and the first non-loopback MCP_ALLOWED_HOSTS name, else the bound loopback address.",
    )
    auth_allowed_users: Annotated[tuple[str, ...], NoDecode] = Field(
        (),
        description="HTTP mode with a launcher's OAuth proxy (GitHub, Google...): the accounts let in (login, "
        "email or subject); required, since such a proxy admits any account.",
    )
    oauth_test_cimd_ca: Path | None = Field(
        None,
        description="Tests only: client ID metadata documents may also be fetched from an HTTPS server on "
        "127.0.0.1 whose certificate this CA signs. Never widens what is fetched from other hosts.",
    )
    http_allow_private: bool = Field(
        False,
        description="HTTP mode: let servers added in conversation point at loopback and private addresses.",
    )
    max_http_sessions_per_client: int = Field(
        16, ge=1, le=1000, description="HTTP mode: open MCP sessions one client may hold; its least recently used "
        "idle session is closed to make room for a new one (only a client whose every session is busy is refused)."
    )
    # -- relay: what a downstream sends back (bridge.downstream.relay, bridge.tools.results, .parked)
    max_media_bytes: int = Field(
        4 * 1024 * 1024, ge=0, le=64 * 1024 * 1024, description="Bytes of images and audio one result may pass through."
    )
    result_keep_s: float = Field(
        600.0, ge=0, le=86_400, description="Seconds a cut result stays readable after it was last read; 0: not kept."
    )
    result_keep_chars: int = Field(
        20_000_000, ge=0, le=1_000_000_000, description="Characters of cut results kept in all, the least recent dropped first."
    )
    input_ttl_s: float = Field(
        600.0, gt=0, le=86_400, description="Seconds a call waits for a 2026-07-28 host to answer what its server asked."
    )
    progress_interval_s: float = Field(
        0.1, ge=0, le=60, description="Least seconds between progress notifications relayed for one call."
    )

    @field_validator(
        "allowed_transports",
        "child_env_prefixes",
        "allowed_hosts",
        "allowed_origins",
        "secret_env_allow",
        "auth_allowed_users",
        mode="before",
    )
    @classmethod
    def _split_commas(cls, value: object) -> object:
        """Env vars hold comma-separated lists: `MCP_ALLOWED_TRANSPORTS=http,stdio`."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("sandbox_network", mode="before")
    @classmethod
    def _network(cls, value: object) -> object:
        return parse_network(value)

    @field_validator("child_memory_mb", "child_open_files")
    @classmethod
    def _off_or_enough(cls, value: int, info: ValidationInfo) -> int:
        """Below these neither python nor node starts: say so at start, not at every spawn."""
        least = LIMIT_MINIMUMS[info.field_name or ""]
        if 0 < value < least:
            raise ValueError(f"must be 0 (no limit) or at least {least}")
        return value

    @field_validator("allowed_transports")
    @classmethod
    def _not_empty(cls, value: frozenset[str]) -> frozenset[str]:
        if not value:
            raise ValueError("at least one transport must be allowed (http, stdio)")
        return value

    @field_validator("secret_env_allow")
    @classmethod
    def _secret_entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            parse_allow(entry)
        return value

    @field_validator("public_url")
    @classmethod
    def _origin_only(cls, value: AnyHttpUrl | None) -> AnyHttpUrl | None:
        """The issuer is an origin: the MCP endpoint is always `<public URL>/mcp`."""
        if value is not None and (value.path not in (None, "", "/") or value.query or value.fragment):
            raise ValueError("must be an origin only, e.g. https://your-name.trycloudflare.com (no path)")
        return value

    @field_validator("auth_token")
    @classmethod
    def _strong_token(cls, value: SecretStr | None) -> SecretStr | None:
        """A short token can be guessed over a tunnel; this message must never quote it."""
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters (e.g. `openssl rand -hex 32`)")
        return value

    @field_validator("state_dir", "workspace", "homes_dir", "proxy_dir")
    @classmethod
    def _absolute(cls, value: Path | None) -> Path | None:
        return value.expanduser().resolve() if value is not None else None

    @field_validator("homes_dir")
    @classmethod
    def _homes_apart(cls, value: Path, info: ValidationInfo) -> Path:
        """Homes inside the state dir would be masked with it; the state dir inside a home, writable."""
        state = info.data.get("state_dir")
        if state is not None and (value.is_relative_to(state) or state.is_relative_to(value)):
            raise ValueError(f"must lie outside MCP_STATE_DIR ({state}) and not contain it")
        return value

    @property
    def limits(self) -> Limits:
        """The per-child limits; a 0 setting leaves that one unlimited."""
        return Limits(
            memory_bytes=self.child_memory_mb * MIB or None,
            processes=self.child_processes or None,
            file_bytes=self.child_file_mb * MIB or None,
            open_files=self.child_open_files or None,
        )

    @property
    def registry_path(self) -> Path:
        """The canonical dynamic registry file."""
        return self.state_dir / "tool_mcp" / "servers.json"

    @property
    def tokens_dir(self) -> Path:
        """Where the OAuth sign-ins to downstream servers are kept, one file per server."""
        return self.state_dir / "oauth" / "servers"

    @property
    def audit_dir(self) -> Path:
        """Where the audit log (`audit.jsonl` and its rotations) lives."""
        return self.state_dir / "audit"

    @property
    def legacy_registry_path(self) -> Path:
        """The registry's old home inside the workspace; its entries are adopted once, at start."""
        return self.workspace / "tool_mcp" / "servers.json"


def describe_error(exc: ValidationError) -> str:
    """Name each bad setting, its variable and the value refused, quoted (`MCP_TIMEOUT='5s'`), but
    never the value of a secret (`MCP_AUTH_TOKEN`)."""
    secrets = {name for name, field in Settings.model_fields.items() if "SecretStr" in str(field.annotation)}
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        given = error.get("input")
        shown = f"={quoted(given, 200)}" if isinstance(given, str) and error["loc"] and where not in secrets else ""
        problems.append(f"{where} (MCP_{where.upper()}{shown}): {error['msg']}")
    return "; ".join(problems)


def misspelt(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """`MCP_*` variables that name no setting, each with its closest setting's variable, if any."""
    known = [f"MCP_{name.upper()}" for name in Settings.model_fields] + list(OTHER_VARIABLES)
    found = []
    for name in sorted(environ):
        if name.startswith("MCP_") and name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            found.append((name, close[0] if close else None))
    return found


# Variables the bridge reads that are not `Settings` fields.
OTHER_VARIABLES = ("MCP_CONFIG",)


class ConfigFileError(ValueError):
    """The developer's config file cannot be used; the message names it."""


def config_path(environ: Mapping[str, str]) -> Path | None:
    """Where `MCP_SERVERS` comes from: `MCP_CONFIG`, else the checkout's `config.py`, else nowhere."""
    named = environ.get("MCP_CONFIG", "")
    if named:
        return Path(named).expanduser().resolve()
    root = checkout_root()
    if root is not None and (root / "config.py").is_file():
        return root / "config.py"
    return None


def developer_servers(path: Path | None) -> dict[str, dict[str, Any]]:
    """`MCP_SERVERS` of the developer's config file (a Python file; `{}` when there is none)."""
    if path is None:
        return {}
    if not path.is_file():
        raise ConfigFileError(f"MCP_CONFIG names {path}, which is not a file")
    try:
        servers = runpy.run_path(str(path), run_name="mcp_bridge_config").get("MCP_SERVERS", {})
    except Exception as exc:  # the developer's own code: any error it raises is a bad config  # noqa: BLE001
        raise ConfigFileError(f"{path} failed to load: {type(exc).__name__}: {exc}") from None
    if not isinstance(servers, dict):
        raise ConfigFileError(f"{path}: MCP_SERVERS must be a dict")
    return servers


OWN_CODE = frozenset({"interpreter", "venv", "package", "checkout"})  # read-only to children; state and config: hidden


def own_paths(settings: Settings, config_file: Path | None) -> dict[Path, str]:
    """The bridge's own code, interpreter, venv, checkout, state and config, canonical, each with
    what it is: no child may write them (the next start runs or reads them), wherever the
    workspace is. The sandbox keeps the code read-only and hides the state and config."""
    found = {
        Path(sys.base_prefix).resolve(): "interpreter",
        Path(sys.prefix).resolve(): "venv",
        Path(__file__).resolve().parent: "package",
        Path(sandbox.__file__).resolve().parent: "package",
    }
    if (root := checkout_root()) is not None:
        found[root] = "checkout"
    found[settings.state_dir.resolve()] = "state directory"
    if config_file is not None:
        found[config_file.resolve()] = "config file"
    return found


def workspace_problem(settings: Settings, *, home: Path | None = None, own: Mapping[Path, str] | None = None) -> str | None:
    """Why the workspace cannot serve stdio children, naming `MCP_WORKSPACE`; None when it can.

    Claude Desktop starts servers in `/`: an unset `MCP_WORKSPACE` then means the whole disk. A
    workspace inside the bridge's `own` paths (its checkout, when started there) would let a
    child rewrite what the next start runs.
    """
    workspace = settings.workspace
    home = (home or Path.home()).resolve()
    if workspace == Path("/"):
        hint = "" if "workspace" in settings.model_fields_set else " (it is unset and the working directory is /)"
        return f"MCP_WORKSPACE is the filesystem root /{hint}; set it to a project folder"
    if workspace == home:
        return f"MCP_WORKSPACE is the home folder {home}; set it to a project folder"
    if not workspace.is_dir():
        return f"MCP_WORKSPACE names {workspace}, which is not an existing directory; create it or set another"
    for path, what in (own or {}).items():
        if workspace.resolve().is_relative_to(path):
            hint = "" if "workspace" in settings.model_fields_set else " (it is unset, so the working directory)"
            return (
                f"MCP_WORKSPACE {workspace}{hint} lies inside the bridge's own {what} {path}, which children "
                "may not write; set it to a project folder outside it (scripts/run.sh uses ~/mcp-workspace)"
            )
    return None


def own_paths_inside(workspace: Path, own: Mapping[Path, str]) -> list[str]:
    """What of the bridge's own the workspace holds (said at start: children cannot write it)."""
    ws = workspace.resolve()
    return [f"{what} {path}" for path, what in own.items() if path != ws and path.is_relative_to(ws)]
