"""`mcp-bridge import PATH`: a host's MCP configuration into the dynamic registry.

Formats: `mcpServers` (Claude Desktop, Claude Code's `.mcp.json`, Cursor) and `servers` (VS Code's
`mcp.json`, or `mcp.servers` in its settings.json), as JSON with comments and trailing commas.

Every entry is checked by `bridge.validation` before anything is written, and written through
`Bridge.add_server`, exactly as `mcp_add_server` would. An entry that cannot be carried over is
listed as not imported, with the reason:
- a name the bridge does not accept;
- a stdio command not found on PATH (a bare name is resolved now, to an absolute path), or relative;
- env: a registry entry never carries env (only `the developer's MCP_SERVERS` may). An entry is imported
  only if every env name is one the bridge passes to children itself (`MCP_CHILD_ENV_PREFIXES`,
  credential-looking names never); the file's values are dropped and the child gets the bridge's;
- `envFile`, `${...}` placeholders (VS Code inputs, env expansion), SSE-only servers (`type: sse`);
- a transport disabled by `MCP_ALLOWED_TRANSPORTS`.
A name already registered is skipped unless `--replace`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bridge.cli.context import load_settings, open_bridge, succeeded
from bridge.cli.errors import CliError, Exit, add_command
from bridge.cli.jsonc import strip_jsonc
from bridge.cli.render import table
from bridge.errors import BridgeError
from bridge.models import HttpServerSpec, Origin
from bridge.settings import Settings
from bridge.store.registry import Registry
from bridge.tools import Bridge, validation
from bridge.tools.gates import require_transport
from bridge.wording import count
from sandbox.command import CommandNotFound, resolve_command
from sandbox.environment import is_forbidden

Action = Literal["add", "replace", "skip", "refuse"]
HTTP_TYPES = ("http", "streamable-http", "streamableHttp")


class PlannedEntry(BaseModel):
    """What import does with one entry of the host's config."""

    name: str
    action: Action
    transport: Literal["http", "stdio"] | None = None
    target: str | None = Field(None, description="The URL, or the resolved command line.")
    header_names: list[str] = Field(default_factory=list, description="Header values are never shown.")
    reason: str | None = Field(None, description="Why it is skipped or refused.")
    notes: list[str] = Field(default_factory=list)
    written: bool = False
    # Bridge.add_server's keyword arguments; may hold header values, so never dumped or shown.
    call: dict[str, str | None] = Field(default_factory=dict, exclude=True, repr=False)


class ImportPlan(BaseModel):
    source: str
    key: str = Field(description="Where the servers were found: mcpServers, servers or mcp.servers.")
    dry_run: bool
    entries: list[PlannedEntry]

    @property
    def refused(self) -> list[PlannedEntry]:
        return [entry for entry in self.entries if entry.action == "refuse"]


class _Refused(Exception):
    """This entry cannot be imported; the message says why."""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = add_command(
        commands,
        "import",
        "import servers from a host's config",
        "Add the servers of a host's MCP config to the dynamic registry: claude_desktop_config.json,\n"
        "Claude Code's .mcp.json, Cursor's mcp.json (mcpServers) or VS Code's mcp.json (servers).\n"
        "Commands are resolved to absolute paths now; env is kept only as names the bridge passes\n"
        "through itself (MCP_CHILD_ENV_PREFIXES), never as values; what cannot be imported is listed\n"
        "with the reason, and makes the exit code 1.",
    )
    command.add_argument("path", type=Path, help="the host's config file")
    command.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
    command.add_argument("--replace", action="store_true", help="overwrite servers already registered by those names")
    command.add_argument("--json", action="store_true", help="print the plan as JSON")
    command.set_defaults(run=import_config)


# -- reading the host's file -------------------------------------------------------------------

def read_host_config(path: Path) -> tuple[str, dict[str, Any]]:
    """The servers object of a host's config and the key it sits under."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(strip_jsonc(text))
    except ValueError as exc:
        raise CliError(f"{path} is not JSON (comments and trailing commas are accepted): {exc}") from None
    if isinstance(data, dict):
        vscode_settings = data.get("mcp") if isinstance(data.get("mcp"), dict) else {}
        found = {key: data.get(key) for key in ("mcpServers", "servers")}
        found["mcp.servers"] = vscode_settings.get("servers")
        for key, servers in found.items():
            if isinstance(servers, dict):
                return key, servers
    raise CliError(f"{path} has no mcpServers or servers object")


# -- planning -------------------------------------------------------------------------------------


def _placeholders(raw: dict[str, Any]) -> list[str]:
    """Where the entry uses `${...}`, named by field: a header value is never echoed."""
    fields: list[tuple[str, object]] = [(key, raw.get(key)) for key in ("command", "url", "cwd")]
    args, headers = raw.get("args"), raw.get("headers")
    fields += [(f"args[{index}]", arg) for index, arg in enumerate(args)] if isinstance(args, list) else []
    fields += [(f"header {name}", value) for name, value in headers.items()] if isinstance(headers, dict) else []
    return [label for label, value in fields if isinstance(value, str) and "${" in value]


def _resolve_command(command: object) -> str:
    """Resolved now, on this PATH: the sandboxed child gets no PATH lookup of its own."""
    if not isinstance(command, str) or not command:
        raise _Refused("command must be a non-empty string")
    try:
        return resolve_command(command, path_env=os.environ.get("PATH", os.defpath))
    except CommandNotFound as exc:
        raise _Refused(str(exc)) from None


def _env_notes(env: object, prefixes: tuple[str, ...]) -> list[str]:
    """Env names the bridge passes through itself are fine (values dropped); any other env is refused."""
    if not isinstance(env, dict):
        raise _Refused("env must be an object")
    if not env:
        return []
    prefixes = tuple(prefix for prefix in prefixes if prefix)
    missing = sorted(name for name in env if is_forbidden(name) or not name.startswith(prefixes))
    if missing:
        if any(is_forbidden(name) for name in missing):
            hint = "add the server to the developer's MCP_SERVERS (credential-looking names pass no prefix)"
        else:
            hint = "add the server to the developer's MCP_SERVERS or allow the prefix via MCP_CHILD_ENV_PREFIXES"
        raise _Refused(f"needs env {', '.join(missing)}, which a dynamic server cannot carry; {hint}")
    names = ", ".join(sorted(env))
    return [f"env {names}: the file's values are dropped; the child gets the bridge's own (MCP_CHILD_ENV_PREFIXES)"]


def _call(raw: object, prefixes: tuple[str, ...]) -> tuple[dict[str, str | None], list[str]]:
    """Bridge.add_server's arguments for one host entry, and notes on what was left behind."""
    if not isinstance(raw, dict):
        raise _Refused("the entry is not an object")
    kind = raw.get("type")
    if kind == "sse":
        raise _Refused(
            "SSE-only server (type: sse): the bridge speaks Streamable HTTP; if the server also serves it, "
            "add that URL with `mcp-bridge servers add NAME --url URL`"
        )
    if "envFile" in raw:
        raise _Refused("reads env from envFile, which a dynamic server cannot carry; add it to the developer's MCP_SERVERS")
    placeholders = _placeholders(raw)
    if placeholders:
        raise _Refused(f"uses ${{...}} placeholders, which import does not expand (in {', '.join(placeholders)})")
    if kind in HTTP_TYPES or (kind is None and "url" in raw and "command" not in raw):
        headers = raw.get("headers") or {}
        return {"url": raw.get("url"), "headers_json": json.dumps(headers) if headers else None}, []
    if kind in (None, "stdio") and "command" in raw:
        notes = _env_notes(raw.get("env") or {}, prefixes)
        command = _resolve_command(raw["command"])
        return {"command": command, "args_json": json.dumps(raw.get("args") or []), "cwd": raw.get("cwd")}, notes
    if kind not in (None, "stdio", *HTTP_TYPES):
        raise _Refused(f"type {kind!r} is not a transport the bridge speaks (stdio, http)")
    raise _Refused("has neither a command (stdio) nor a url (http)")


def plan_entry(
    name: str, raw: object, settings: Settings, existing: dict[str, Origin], *, replace: bool
) -> PlannedEntry:
    if isinstance(raw, dict) and raw.get("disabled") is True:
        return PlannedEntry(name=name, action="skip", reason="disabled in the host's config (\"disabled\": true)")
    try:
        validation.server_name(name)
        call, notes = _call(raw, settings.child_env_prefixes)
        spec = validation.server_spec(
            url_value=call.get("url"),
            headers_json=call.get("headers_json"),
            command_value=call.get("command"),
            args_json=call.get("args_json"),
            cwd_value=call.get("cwd"),
            workspace=settings.workspace,
            path_env=os.environ.get("PATH", os.defpath),
        )
        require_transport(settings, spec)
    except _Refused as exc:
        return PlannedEntry(name=name, action="refuse", reason=str(exc))
    except BridgeError as exc:
        return PlannedEntry(name=name, action="refuse", reason=exc.message)
    if isinstance(spec, HttpServerSpec):
        entry = PlannedEntry(
            name=name, action="add", transport="http", target=spec.url, header_names=sorted(spec.headers)
        )
    else:
        entry = PlannedEntry(name=name, action="add", transport="stdio", target=shlex.join([spec.command, *spec.args]))
    entry.notes, entry.call = notes, call
    if name in existing:
        if not replace:
            entry.action, entry.reason = "skip", f"already registered ({existing[name]}); --replace overwrites it"
        else:
            entry.action = "replace"
            if existing[name] == "config":
                entry.notes.append("shadows the developer's config entry of that name until removed")
    return entry


def plan_import(
    path: Path, settings: Settings, registry: Registry, *, replace: bool, dry_run: bool
) -> ImportPlan:
    key, servers = read_host_config(path)
    existing = {name: origin for name, (_, origin) in registry.merged().items()}
    entries = [plan_entry(name, raw, settings, existing, replace=replace) for name, raw in servers.items()]
    return ImportPlan(source=str(path.absolute()), key=key, dry_run=dry_run, entries=entries)


def apply(plan: ImportPlan, bridge: Bridge) -> None:
    """Write the planned entries in order; the first failed write (forbidden, registry) stops the import."""
    for entry in plan.entries:
        if entry.action in ("add", "replace"):
            succeeded(bridge.add_server(entry.name, **entry.call))
            entry.written = True


# -- the command -------------------------------------------------------------------------------


def _verb(entry: PlannedEntry, dry_run: bool) -> str:
    if entry.action in ("skip", "refuse"):
        return {"skip": "skipped", "refuse": "not imported"}[entry.action]
    if dry_run:
        return f"would {entry.action}"
    done = {"add": "added", "replace": "replaced"}[entry.action]
    return done if entry.written else f"not {done}"


def render(plan: ImportPlan) -> str:
    rows = []
    for entry in plan.entries:
        if entry.action in ("add", "replace"):
            detail = f"{entry.transport}: {entry.target}"
            if entry.header_names:
                detail += f" (headers: {', '.join(entry.header_names)})"
        else:
            detail = entry.reason or ""
        rows.append([_verb(entry, plan.dry_run), entry.name, detail])
        rows.extend(["", "", f"note: {note}"] for note in entry.notes)
    lines = [f"{plan.source} ({plan.key}: {count(len(plan.entries), 'server')})"]
    if rows:
        lines.append(table(rows))
    if plan.dry_run:
        lines.append("dry run: nothing was written")
    return "\n".join(lines)


def import_config(args: argparse.Namespace) -> int:
    settings = load_settings()
    with open_bridge(settings, create_registry=not args.dry_run) as bridge:
        plan = plan_import(args.path, settings, bridge.registry, replace=args.replace, dry_run=args.dry_run)
        try:
            if not args.dry_run:
                apply(plan, bridge)
        finally:  # a failed write still shows what was written before it
            print(plan.model_dump_json(indent=2) if args.json else render(plan))
    return Exit.CHECK_FAILED if plan.refused else Exit.OK
