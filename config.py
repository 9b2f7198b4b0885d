"""Configuration: the only module that reads the environment.

`Settings` holds every operator setting (env vars prefixed `MCP_`), each with a default and bounds.
`MCP_SERVERS` is the developer-owned layer of the registry: servers provisioned in source, which the
conversation can use but never change or remove. Entries have the same shape as the dynamic
registry's, and may also carry `env` (stdio), `network` (stdio: "deny" or "allow") and
`write_paths` (stdio: extra writable capability paths), which only the developer may grant, and
`tools`, a tool policy (`allow` / `deny` name patterns, `read_only`) that binds the name even when
the conversation adds a dynamic entry of the same name.

    MCP_SERVERS = {
        "time": {"transport": "stdio", "command": "/usr/local/bin/mcp-server-time", "args": []},
        "docs": {"transport": "http", "url": "https://example.com/mcp", "headers": {}},
        "db": {"transport": "http", "url": "https://db.example.com/mcp", "tools": {"read_only": True}},
    }
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bridge import secrets

PROJECT_ROOT = Path(__file__).resolve().parent

MCP_SERVERS: dict[str, dict[str, Any]] = {}

Transport = Literal["http", "stdio"]


class Settings(BaseSettings):
    """Operator settings, read from `MCP_*` environment variables."""

    model_config = SettingsConfigDict(env_prefix="MCP_", extra="ignore", frozen=True)

    max_chars: int = Field(4000, ge=200, le=1_000_000, description="Character budget of every tool result.")
    timeout: float = Field(60.0, gt=0, le=3600, description="Seconds one downstream operation may take.")
    state_dir: Path = Field(PROJECT_ROOT / "work", description="Runtime state: registry, logs.")
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
    sandbox_network: Literal["deny", "allow"] = Field("deny", description="Network for stdio children.")
    child_env_prefixes: Annotated[tuple[str, ...], NoDecode] = Field(
        (), description="Bridge env vars with these name prefixes are passed to stdio children."
    )
    secret_env_allow: Annotated[tuple[str, ...], NoDecode] = Field(
        (),
        description="Env vars a header may name as ${env:NAME}, each as NAME or NAME@host (host may use * wildcards).",
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

    @field_validator(
        "allowed_transports", "child_env_prefixes", "allowed_hosts", "allowed_origins", "secret_env_allow", mode="before"
    )
    @classmethod
    def _split_commas(cls, value: object) -> object:
        """Env vars hold comma-separated lists: `MCP_ALLOWED_TRANSPORTS=http,stdio`."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
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
            secrets.parse_allow(entry)
        return value

    @field_validator("auth_token")
    @classmethod
    def _strong_token(cls, value: SecretStr | None) -> SecretStr | None:
        """A short token can be guessed over a tunnel; this message must never quote it."""
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters (e.g. `openssl rand -hex 32`)")
        return value

    @field_validator("state_dir", "workspace")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @property
    def registry_path(self) -> Path:
        """The canonical dynamic registry file."""
        return self.state_dir / "tool_mcp" / "servers.json"

    @property
    def audit_dir(self) -> Path:
        """Where the audit log (`audit.jsonl` and its rotations) lives."""
        return self.state_dir / "audit"

    @property
    def legacy_registry_path(self) -> Path:
        """The registry's old home inside the workspace; its entries are adopted once, at start."""
        return self.workspace / "tool_mcp" / "servers.json"


def describe_error(exc: ValidationError) -> str:
    """Name each bad setting and what is wrong, never the value given: it may be a secret."""
    messages = []
    for error in exc.errors(include_url=False, include_input=False):
        field = ".".join(str(part) for part in error["loc"])
        messages.append(f"{field} (MCP_{field.upper()}): {error['msg']}")
    return "; ".join(messages)
