"""Typed values at the bridge's boundaries: server specs and tool results (errors: `bridge.errors`)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandbox.environment import steers_the_child
from sandbox.network import NetworkSetting, normalize_hosts

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a server's name, in both layers
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
ENV_REFERENCE = re.compile(r"\$\{env:([^}]*)\}")


def env_reference(value: str) -> str | None:
    """The NAME of a value that is exactly one `${env:NAME}`; None for anything else (a literal)."""
    match = ENV_REFERENCE.fullmatch(value)
    return match.group(1) if match is not None and ENV_NAME.fullmatch(match.group(1)) else None


LITERAL_REFUSED = "a value must be a reference ${env:NAME}, never the value itself"


def secret_env_problem(variable: str, reference: object) -> str | None:
    """Why a stdio server's `secret_env` cannot hold `variable: reference`; None when it can."""
    if not ENV_NAME.fullmatch(variable):
        return "not a variable name"
    if steers_the_child(variable):
        return "the sandbox sets it, or it steers a loader"
    if not isinstance(reference, str) or env_reference(reference) is None:
        return LITERAL_REFUSED
    return None


class ToolPolicy(BaseModel):
    """Which downstream tools of a server may be called; set per server in `config.MCP_SERVERS` only.

    Patterns are shell-style (`fnmatch`, case-sensitive). A tool is callable when it matches `allow`
    (or `allow` is empty), matches no `deny` pattern and, with `read_only`, is annotated
    `readOnlyHint: true`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    read_only: bool = False


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    added_at: datetime | None = None
    tools: ToolPolicy | None = Field(
        None, description="Developer-only: restricts calls; applies to the name whichever layer serves it."
    )


class OAuthClient(BaseModel):
    """Developer-only: the client the bridge signs in as, when the operator set one up with the server.

    Secrets are references (`${env:NAME}`), read from the bridge's environment when a connection is
    made: never written to the registry, a token file, a listing or a log. Without any of this the
    bridge registers itself (dynamic client registration) where the server allows it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    client_id: str | None = Field(None, description="A client registered with the server's authorization server.")
    scopes: tuple[str, ...] = Field((), description="Scopes to ask for; else the server's metadata decides.")
    client_secret: str | None = Field(None, description="The client's secret, as `${env:NAME}`.")
    private_key: str | None = Field(
        None, description="A PEM private key, as `${env:NAME}`: client_credentials authenticated by a signed JWT."
    )
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = Field(
        None, description="How a secret goes to the token endpoint; unset: what the server's metadata asks for."
    )
    client_metadata_url: str | None = Field(
        None, description="An https URL of the bridge's client ID metadata document (CIMD), where servers support it."
    )
    grant: Literal["authorization_code", "client_credentials"] = Field(
        "authorization_code", description="client_credentials: machine to machine, no user sign-in."
    )
    signing_algorithm: str = Field("RS256", description="The JWT algorithm for `private_key` (RS256, ES256, ...).")
    issuer: str | None = Field(
        None, description="The authorization server these credentials belong to: they are sent to no other."
    )

    @field_validator("client_secret", "private_key")
    @classmethod
    def _by_reference(cls, value: str | None) -> str | None:
        if value is not None and env_reference(value) is None:
            raise ValueError("must be a reference to the bridge's environment, ${env:NAME}, never the secret itself")
        return value

    @field_validator("client_metadata_url")
    @classmethod
    def _https(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https://[^/\s]+/\S+", value):
            raise ValueError("must be an https URL with a path (the client ID metadata document)")
        return value

    @model_validator(mode="after")
    def _complete(self) -> OAuthClient:
        one_credential = (self.client_secret is None) != (self.private_key is None)
        if self.grant == "client_credentials" and (self.client_id is None or not one_credential):
            raise ValueError("grant client_credentials needs client_id and either client_secret or private_key")
        if self.private_key is not None and self.grant != "client_credentials":
            raise ValueError("private_key is for grant client_credentials")
        if (self.client_secret is not None or self.token_endpoint_auth_method is not None) and self.client_id is None:
            raise ValueError("client_secret and token_endpoint_auth_method need client_id")
        return self


class HttpServerSpec(_Spec):
    """A Streamable HTTP endpoint. Headers may hold secrets: never echoed, never logged."""

    transport: Literal["http"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: OAuthClient | None = Field(None, description="Developer-only: static OAuth client info.")

    def developer_only_fields(self) -> list[str]:
        """The developer-only fields this entry sets."""
        return ["oauth"] if self.oauth is not None else []
    registered_by: Literal["conversation", "operator"] = Field(
        "conversation",
        description="Who chose the URL: the conversation (mcp_add_server; SSRF rules apply) or the operator "
        "(the developer's config, the CLI). Entries older than this field count as the conversation's.",
    )


class StdioServerSpec(_Spec):
    """A local program spoken to over stdio, always launched through the sandbox.

    `env`, `network`, `read_paths`, `write_paths` and `git_write_paths` widen what the child gets
    (`DEVELOPER_ONLY`); only the developer config may set them, so validation of conversation input
    never produces them and a registry file carrying one is refused.
    """

    transport: Literal["stdio"] = "stdio"
    command: str
    args: tuple[str, ...] = ()
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    secret_env: dict[str, str] = Field(
        default_factory=dict,
        description="Variables the child gets from the bridge's environment, each as ${env:NAME}: stored as the "
        "reference, resolved at each start for the names MCP_SECRET_ENV_ALLOW binds to this server.",
    )
    network: NetworkSetting | None = Field(
        None, description="deny, allow, registry, or a list of host names; None: MCP_SANDBOX_NETWORK (launchers: registry)."
    )
    read_paths: tuple[str, ...] = Field((), description="Absolute paths hidden by default that the child may read.")
    write_paths: tuple[str, ...] = Field((), description="Absolute paths the child may write besides the workspace.")
    git_write_paths: tuple[str, ...] = Field(
        (), description="Writable roots (or nested repositories) whose .git the child may write: commits, hooks, config."
    )

    @field_validator("network", mode="before")
    @classmethod
    def _hosts(cls, value: object) -> object:
        """A list names hosts: normalised, IP literals refused."""
        if isinstance(value, list | tuple):
            return normalize_hosts([str(host) for host in value])
        return value

    @field_validator("secret_env")
    @classmethod
    def _references_only(cls, value: dict[str, str]) -> dict[str, str]:
        for variable, reference in value.items():
            if (problem := secret_env_problem(variable, reference)) is not None:
                raise ValueError(f"{variable[:64]!r}: {problem}")
        return value

    @field_validator("read_paths", "write_paths", "git_write_paths")
    @classmethod
    def _absolute(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for path in value:
            if not path.startswith(("/", "~")):
                raise ValueError(f"{path!r} must be an absolute path")
        return value

    def developer_only_fields(self) -> list[str]:
        """The developer-only fields this entry sets."""
        return [name for name in DEVELOPER_ONLY if getattr(self, name)]


DEVELOPER_ONLY = ("env", "network", "read_paths", "write_paths", "git_write_paths")


ServerSpec = Annotated[HttpServerSpec | StdioServerSpec, Field(discriminator="transport")]

Origin = Literal["config", "dynamic", "dynamic (shadows config)"]


class ServerInfo(BaseModel):
    """One registered server as listed to the model: never its headers or env."""

    name: str
    transport: Literal["http", "stdio"]
    origin: Origin
    target: str = Field(description="The URL, or the command line of a stdio server.")


class ServerList(BaseModel):
    ok: Literal[True] = True
    servers: list[ServerInfo]
    warning: str | None = Field(
        default=None, description="Set when the registry of added servers cannot be read: they are not listed."
    )


class ToolSummary(BaseModel):
    name: str
    description: str
    refused: str | None = Field(None, description="Why the tool cannot be called here (tool policy); None: callable.")


class Drift(BaseModel):
    """How a server's tools differ from the ones first seen after it was added."""

    since: datetime = Field(description="When the tools were first seen.")
    added: list[str]
    removed: list[str]
    changed: list[str] = Field(description="Same name, different description, schema or annotations.")


class ToolCatalog(BaseModel):
    ok: Literal[True] = True
    server: str
    tools: list[ToolSummary]
    truncated: bool = Field(description="True when descriptions were shortened to fit the budget.")
    drift: Drift | None = Field(None, description="Set when the tools changed since they were first seen.")


class Match(BaseModel):
    server: str
    tool: str
    description: str
    refused: str | None = Field(None, description="Why the tool cannot be called here (tool policy); None: callable.")


class NotIndexed(BaseModel):
    server: str
    reason: str


class SearchResult(BaseModel):
    ok: Literal[True] = True
    query: str
    matches: list[Match] = Field(description="Best first.")
    servers_searched: list[str]
    servers_not_indexed: list[NotIndexed] = Field(description="Servers whose tools could not be searched, and why.")


class ToolSchema(BaseModel):
    ok: Literal[True] = True
    server: str
    tool: dict[str, Any] = Field(description="The downstream tool definition as the server sent it.")
    refused: str | None = Field(None, description="Why the tool cannot be called here (tool policy); None: callable.")


class CallResult(BaseModel):
    ok: Literal[True] = True
    server: str
    tool: str
    text: str
    truncated: bool
    full_length: int = Field(description="Characters of the whole text before the budget cut.")
    offset: int = Field(0, description="Where in the whole text this part starts.")
    next_offset: int | None = Field(None, description="Where the next part starts; None: this part reaches the end.")
    result_handle: str | None = Field(
        None, description="Pass with next_offset to mcp_call_tool to read the next part."
    )
    structured_content: dict[str, Any] | None = None
    other_content: list[str] = Field(default_factory=list, description="Lines naming the non-text blocks.")


class InputRequested(BaseModel):
    """A call that waits for the user's answers (a 2026-07-28 host gets them as `input_required`)."""

    ok: Literal[True] = True
    server: str
    tool: str
    asks: list[str]


class AddResult(BaseModel):
    ok: Literal[True] = True
    server: ServerInfo
    replaced: bool


class RemoveResult(BaseModel):
    ok: Literal[True] = True
    name: str
    restored_config_entry: bool
