"""The four tools: validate -> resolve in the store -> gates and policy -> downstream -> render.

`Bridge` is the composition root: it builds the store, the session pool on the worker loop, the
sandbox settings and the audit log from `Settings`, and serves the four tools. Each tool has an
async face (`*_async`, awaitable from any event loop; the host face uses these) and a sync face
(`bridge.tools.sync`). Downstream work always runs on the worker loop (`bridge.downstream.runtime`).
Every tool returns a `Reply` and never raises for a failure the model could cause or meet
downstream: those come back as `ErrorResult`s with a code.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import anyio.to_thread
import mcp_types as types
from opentelemetry.trace import SpanKind, Status, StatusCode

from bridge import ssrf, telemetry
from bridge.downstream.backoff import Backoff
from bridge.downstream.connection import SessionSettings
from bridge.downstream.pool import Sessions
from bridge.downstream.relay import CallRelay, HostChannel, RelayLimits, roots_for
from bridge.downstream.runtime import Runtime
from bridge.downstream.stdio import ChildSupport, launch_refusal, plan_child
from bridge.errors import BridgeError, ErrorResult, unknown_tool
from bridge.models import (
    AddResult,
    HttpServerSpec,
    Origin,
    RemoveResult,
    ServerInfo,
    ServerList,
    ServerSpec,
    StdioServerSpec,
    ToolPolicy,
)
from bridge.settings import OWN_CODE, Settings, config_path, own_paths, workspace_problem
from bridge.store.catalog import Catalog
from bridge.store.registry import Registry, parse_config_servers
from bridge.tools import output, policy, search, secrets, validation
from bridge.tools.audit import AuditEntry, AuditLog
from bridge.tools.drift import DriftGuard
from bridge.tools.finding import Finding, Indexing
from bridge.tools.gates import require_dynamic, require_transport
from bridge.tools.parked import Asks, Parking
from bridge.tools.relayed import RESOURCES_READ, Relayed
from bridge.tools.reply import Reply
from bridge.tools.results import Results
from bridge.tools.signin import SignIns
from bridge.tools.signing import Signing
from bridge.tools.sync import SyncFaces
from sandbox import (
    CommandNotFound,
    FilteringProxy,
    Plan,
    SandboxConfig,
    SandboxUnavailable,
    probe,
    remove_home,
    sweep_leftovers,
)


def _info(name: str, spec: ServerSpec, origin: Origin) -> ServerInfo:
    if isinstance(spec, HttpServerSpec):
        target = spec.url
    else:
        target = shlex.join([spec.command, *spec.args])
    return ServerInfo(name=name, transport=spec.transport, origin=origin, target=target)


def _keeps_home(before: ServerSpec | None, after: ServerSpec) -> bool:
    """Whether a re-registered entry keeps its stdio home: only when it runs the same program."""
    if not isinstance(before, StdioServerSpec):
        return True
    return isinstance(after, StdioServerSpec) and (before.command, *before.args) == (after.command, *after.args)


def _audited_name(value: object) -> str | None:
    """A name as the audit keeps it: what the model sent, shortened; never anything else."""
    if value is None or value == "":
        return None
    text = (value if isinstance(value, str) else repr(value))[:200]
    return text.encode("utf-8", "backslashreplace").decode()  # a lone surrogate cannot be written as JSON


def _size(arguments_json: object) -> int:
    """What the audit keeps of the arguments: their size, never their content."""
    if isinstance(arguments_json, str):
        return len(arguments_json.encode(errors="replace"))
    if isinstance(arguments_json, dict):
        return len(json.dumps(arguments_json, ensure_ascii=False, default=str).encode(errors="replace"))
    return 0


class Bridge(SyncFaces, Relayed, Signing, Finding):
    """Holds what the four tools share: settings, the registry, sessions and the worker loop."""

    def __init__(
        self,
        settings: Settings,
        config_servers: dict[str, dict[str, object]],
        *,
        caller: Literal["host", "cli"] = "host",
        served_over_http: bool = False,
        create_registry: bool = True,
    ) -> None:
        """`caller` names who drives this Bridge: the host's model, or the CLI (the operator, whose
        servers may point anywhere). `served_over_http`: the host face is reachable over HTTP, so
        servers the conversation adds may not point at loopback or private addresses (unless
        `MCP_HTTP_ALLOW_PRIVATE`). `create_registry` creates a missing registry file (adopting the
        legacy one) now, at start.

        Raises `ValueError` naming the entry when the developer's config cannot be served.
        """
        self.settings = settings
        self.caller = caller
        # Said at start by the host face, and in every stdio error: Claude Desktop starts us in /.
        config_file = config_path(os.environ)
        self.own = own_paths(settings, config_file)  # never writable by a child, wherever the workspace is
        self.workspace_problem = workspace_problem(settings, own=self.own)
        self.registry = Registry(
            path=settings.registry_path,
            legacy_path=settings.legacy_registry_path,
            config_servers=parse_config_servers(config_servers),
        )
        if create_registry:
            self.registry.ensure_canonical()
        self.sandbox = SandboxConfig(
            backend=settings.sandbox,
            workspace=settings.workspace,
            state_dir=settings.state_dir,
            network=settings.sandbox_network,
            child_env_prefixes=settings.child_env_prefixes,
            # The developer's config file may hold tokens; the legacy registry, header secrets.
            secret_paths=(settings.legacy_registry_path, *((config_file,) if config_file else ())),
            homes_dir=settings.homes_dir,
            proxy_dir=settings.proxy_dir,
            limits=settings.limits,
            pids_cgroup=settings.sandbox_pids_cgroup,
            own_paths=tuple(path for path, what in self.own.items() if what in OWN_CODE),
            scan_max_dirs=settings.sandbox_scan_max_dirs,
            child_writable=tuple(
                path
                for spec in self.registry.config_servers.values()
                if isinstance(spec, StdioServerSpec)
                for path in (*spec.write_paths, *spec.git_write_paths)
            ),
        )
        self.proxy = FilteringProxy()
        self.catalog = Catalog(settings.state_dir / "catalog" / "index.sqlite3", search.VERSION)
        self.indexing = Indexing(self)
        self.sessions = Sessions(
            SessionSettings(
                timeout=settings.timeout,
                sandbox=self.sandbox,
                workspace=settings.workspace,
                idle_s=settings.session_idle_s,
                max_sessions=settings.max_sessions,
                start_timeout=settings.start_timeout,
                max_list_pages=settings.max_list_pages,
                max_tools=settings.max_tools,
                conversation_reach="public" if served_over_http and not settings.http_allow_private else "no-metadata",
            ),
            Backoff(after=settings.backoff_after, max_s=settings.backoff_max_s, clock=time.monotonic),
            ChildSupport(proxy=self.proxy, home_key=self.home_key, on_new_repositories=self._new_repositories),
            auth_for=self._signed_in,
            listings=self.indexing,
        )
        # Probed once, now, off the loop that will serve the host; None when stdio children can start.
        self.sandbox_problem = probe(self.sandbox) if "stdio" in settings.allowed_transports else None
        sweep_leftovers(self.sandbox)  # what a bridge killed mid-session left in writable roots
        self.audit = AuditLog(settings.audit_dir, max_bytes=settings.audit_max_bytes, backups=settings.audit_backups)
        self.drift = DriftGuard(self.registry)
        self.results = Results(keep_s=settings.result_keep_s, keep_chars=settings.result_keep_chars)
        self.parking = Parking(ttl_s=settings.input_ttl_s, max_parked=settings.max_sessions)
        self.limits = RelayLimits(progress_interval_s=settings.progress_interval_s)
        # URIs each server linked or embedded in a result: `resources/read` may read them.
        self.linked: dict[str, OrderedDict[str, None]] = {}
        self.sign_ins = SignIns(self.sessions.settings)
        self.runtime = Runtime(
            services=[self.sessions.serve, self.proxy.serve, self.parking.serve, self.sign_ins.serve, self.indexing.serve]
        )

    def close(self) -> None:
        self.runtime.close()
        self.audit.close()
        self.catalog.close()

    def tool_definitions(self, server: str) -> list[types.Tool]:
        """A server's full tool definitions, reached as mcp_list_tools reaches them (for the CLI's probe).

        Raises `BridgeError`: this is not a tool, so there is no reply to carry the error.
        """
        name, spec = self.resolve(server)
        return self.runtime.run(lambda: self.sessions.list_tools(name, spec))

    def home_key(self, name: str) -> str:
        """The private home's key: the name for the developer's entry, `<name>.dynamic` for an added
        one (a dot no server name holds), so a shadowing entry never sees the config server's home."""
        origin = self.registry.merged().get(name, (None, "config"))[1]
        return name if origin == "config" else f"{name}.dynamic"

    def plan(self, name: str, spec: StdioServerSpec) -> Plan:
        """The sandboxed launch a spawn of `spec` as `name` would make (nothing is created)."""
        return plan_child(spec, self.sandbox, self.settings.workspace, self.home_key(name))

    def _new_repositories(self, name: str, paths: tuple[Path, ...]) -> None:
        """Mounts cannot stop a `git init` below a writable root: each one the child left is audited."""
        for path in paths:
            self.audit.record(
                AuditEntry(
                    time=datetime.now(UTC), call_id=uuid.uuid4().hex, caller="sandbox", tool="session_end",
                    server=name, duration_ms=0, outcome="new_git_repository", path=str(path),
                )  # fmt: skip
            )

    def _refuse_unrunnable(self, name: str, spec: StdioServerSpec) -> None:
        """What can be known at add time is refused then: a command the sandbox cannot start."""
        try:
            plan = plan_child(spec, self.sandbox, self.settings.workspace, f"{name}.dynamic")
        except CommandNotFound as exc:
            raise launch_refusal(exc, spec.command) from None
        except SandboxUnavailable:
            return  # the machine's, not the entry's: said at start and at every spawn
        if plan.problem is not None:
            raise BridgeError("spawn_failed", f"Cannot start the stdio server: {plan.problem}", command=spec.command)

    def _drop_home(self, name: str) -> None:
        """Remove an added server's private home (its caches, and whatever it wrote there)."""
        remove_home(self.settings.homes_dir, f"{name}.dynamic")

    # -- plumbing ---------------------------------------------------------------------------

    async def _reply(
        self,
        tool: str,
        build: Callable[[], Awaitable[Reply]],
        *,
        server: object = None,
        downstream_tool: object = None,
        arguments_json: object = None,
    ) -> Reply:
        """Run one tool call: a `BridgeError` becomes its `ErrorResult`; either way it is audited and,
        when tracing is set up, a span."""
        started = time.monotonic()
        with telemetry.span(tool, SpanKind.INTERNAL) as span:
            span.set_attribute(telemetry.TOOL, tool)
            span.set_attribute(telemetry.CALLER, self.caller)
            for key, value in ((telemetry.SERVER, server), (telemetry.DOWNSTREAM_TOOL, downstream_tool)):
                if (named := _audited_name(value)) is not None:
                    span.set_attribute(key, named)
            try:
                reply = await build()
            except BridgeError as exc:
                data = exc.to_result()
                text, _ = output.cut(output.error(data), self.settings.max_chars)
                reply = Reply(text=text, data=data)
            outcome = reply.data.code if isinstance(reply.data, ErrorResult) else "ok"
            span.set_attribute(telemetry.OUTCOME, outcome)
            if outcome != "ok":
                span.set_status(Status(StatusCode.ERROR, outcome))
        self.audit.record(
            AuditEntry(
                time=datetime.now(UTC),
                call_id=uuid.uuid4().hex,
                caller=self.caller,
                tool=tool,
                server=_audited_name(server),
                downstream_tool=_audited_name(downstream_tool),
                argument_bytes=_size(arguments_json),
                duration_ms=round((time.monotonic() - started) * 1000, 3),
                outcome=outcome,
            )
        )
        return reply

    def resolve(self, server: object) -> tuple[str, ServerSpec]:
        """The registered spec, ready to connect: `${env:NAME}` references of headers and of a stdio
        server's `secret_env` filled in here, in memory only, so the registry and everything listed
        keep the reference (and a child's error text is redacted of the values, as of `env`'s)."""
        name = validation.server_name(server, "server")
        spec = self.registry.get(name)
        require_transport(self.settings, spec)
        if isinstance(spec, StdioServerSpec) and self.workspace_problem is not None:
            raise BridgeError("spawn_failed", f"Stdio servers cannot start here: {self.workspace_problem}.")
        if isinstance(spec, HttpServerSpec) and spec.headers:
            headers = secrets.resolve(
                spec.headers, spec.url, self.settings.secret_env_allow, os.environ, operator=spec.registered_by == "operator"
            )
            spec = spec.model_copy(update={"headers": headers})
        if isinstance(spec, StdioServerSpec) and spec.secret_env:  # the developer's env, where both set a name
            operator = name not in self.registry.dynamic()  # the developer's config entry
            given = secrets.resolve_env(spec.secret_env, name, self.settings.secret_env_allow, os.environ, operator=operator)
            spec = spec.model_copy(update={"env": given | spec.env})
        return name, spec

    def _admit_url(self, spec: HttpServerSpec) -> HttpServerSpec:
        """The spec stamped with who chose its URL, once the SSRF rules for that chooser allow it."""
        registered_by = "operator" if self.caller == "cli" else "conversation"
        reach = ssrf.reach_for(registered_by, self.sessions.settings.conversation_reach)
        why = ssrf.url_refusal(spec.url, reach)
        if why is not None:
            hint = " (the operator may allow private addresses with MCP_HTTP_ALLOW_PRIVATE)" if reach == "public" else ""
            raise BridgeError("forbidden", f"A server added in conversation may not point there: {why}{hint}.")
        secrets.resolve(spec.headers, spec.url, self.settings.secret_env_allow, os.environ, operator=registered_by == "operator")
        return spec.model_copy(update={"registered_by": registered_by})

    def _roots(self, spec: ServerSpec) -> Callable[[], list[types.Root]]:
        return functools.partial(roots_for, spec, self.settings.workspace)

    def _policy(self, name: str) -> ToolPolicy | None:
        """The developer's tool policy for `name`: it binds the name, so a dynamic shadow cannot shed it."""
        provisioned = self.registry.config_servers.get(name)
        return provisioned.tools if provisioned is not None else None

    # -- the four tools (async: awaitable from any event loop) ------------------------------

    async def list_tools_async(
        self,
        server: str | None = None,
        tool_name: str | None = None,
        *,
        channel: HostChannel | None = None,
        query: str | None = None,
        limit: int | None = None,
    ) -> Reply:
        """No server: the registered servers. A server: its catalog, as offered to a host with the
        abilities of `channel`'s. And a tool: that tool's schema. A query: the tools that match it
        (`bridge.tools.finding`), of every server or of `server`."""

        async def build() -> Reply:
            if query is not None or limit is not None:
                if tool_name is not None and tool_name != "":
                    raise BridgeError("invalid_argument", "query and tool_name do not go together")
                return await self._find(query, limit, server)
            if server is None or server == "":  # a wrong type (0, [], False) is not "no server"
                if tool_name is not None and tool_name != "":
                    raise BridgeError("invalid_argument", "tool_name needs a server")
                listed, warning = self.registry.listing()
                data = ServerList(
                    servers=[_info(name, spec, origin) for name, (spec, origin) in listed.items()], warning=warning
                )
                text, _ = output.cut(output.servers(data), self.settings.max_chars)
                return Reply(text=text, data=data)
            name, spec = self.resolve(server)
            wanted = None if tool_name is None or tool_name == "" else validation.tool_name(tool_name)
            call = CallRelay(channel=channel, roots=self._roots(spec), server=name, limits=self.limits)
            tools, unrunnable = await self.runtime.run_async(
                lambda: self._signing_in(name, spec, call, lambda: self.sessions.catalog(name, spec, call))
            )
            rules = self._policy(name)
            if wanted is None:
                refusals = {tool.name: policy.refused(rules, tool) or unrunnable.get(tool.name) for tool in tools}
                changed = await self.drift.check(name, spec, tools, call.abilities)
                catalog, text = output.catalog(name, tools, self.settings.max_chars, refusals, changed)
                return Reply(text=text, data=catalog)
            found = next((tool for tool in tools if tool.name == wanted), None)
            if found is None:
                raise unknown_tool(wanted, [tool.name for tool in tools])
            refused = policy.refused(rules, found) or unrunnable.get(found.name)
            schema, text = output.schema(name, found, self.settings.max_chars, refused)
            return Reply(text=text, data=schema)

        return await self._reply("mcp_list_tools", build, server=server, downstream_tool=tool_name)

    async def call_tool_async(
        self,
        server: str,
        tool_name: str,
        arguments_json: object = "{}",
        *,
        channel: HostChannel | None = None,
        result_handle: object = None,
        offset: object = None,
        input_responses: dict[str, types.InputResponse] | None = None,
        request_state: str | None = None,
    ) -> Reply:
        """Call a downstream tool, relaying what its server sends back through `channel` (none: the
        server's asks are declined); or read on in a cut result (`result_handle`, `offset`); or go on
        with a call parked on its server's asks (`request_state`, `input_responses`)."""

        async def build() -> Reply:
            name, spec = self.resolve(server)
            tool = validation.tool_name(tool_name)
            caller = channel.caller if channel is not None else self.caller
            if result_handle is not None or offset is not None:
                return self._read_on(name, tool, caller, result_handle, offset)
            arguments = validation.arguments(arguments_json)
            rules = self._policy(name)
            policy.require_callable(rules, name, tool)
            if tool == RESOURCES_READ:
                return await self._read_resource(name, spec, arguments, caller)

            async def run(up: HostChannel | None) -> tuple[types.CallToolResult, list[str]]:
                relay = CallRelay(channel=up, roots=self._roots(spec), server=name, limits=self.limits)
                _, result = await self._signing_in(
                    name,
                    spec,
                    relay,
                    lambda: self.sessions.call_tool(
                        name, spec, tool, arguments, admit=lambda found: policy.require_callable(rules, name, found), call=relay
                    ),
                )
                return result, relay.notes

            outcome: tuple[types.CallToolResult, list[str]] | Asks
            if request_state is not None and channel is not None:
                state = request_state
                outcome = await self.runtime.run_async(
                    lambda: self.parking.resume(state, caller, name, tool, channel, input_responses or {})
                )
            elif channel is not None and channel.defers_asks and channel.abilities.asks:
                outcome = await self.runtime.run_async(lambda: self.parking.start(caller, name, tool, channel, run))
            else:
                outcome = await self.runtime.run_async(lambda: run(channel))
            if isinstance(outcome, Asks):
                return self._asks(name, tool, outcome)
            result, notes = outcome
            return self._first_page(name, tool, caller, result, notes)

        return await self._reply(
            "mcp_call_tool", build, server=server, downstream_tool=tool_name, arguments_json=arguments_json
        )

    async def add_server_async(
        self,
        name: str,
        url: str | None = None,
        headers_json: str | None = None,
        command: str | None = None,
        args_json: str | None = None,
        cwd: str | None = None,
        env_json: str | None = None,
    ) -> Reply:
        async def build() -> Reply:
            require_dynamic(self.settings)
            checked = validation.server_name(name)
            spec = validation.server_spec(
                url_value=url,
                headers_json=headers_json,
                command_value=command,
                args_json=args_json,
                cwd_value=cwd,
                workspace=self.settings.workspace,
                path_env=os.environ.get("PATH", os.defpath),  # as the CLI resolves a bare name
                env_json=env_json,
            )
            require_transport(self.settings, spec)
            if isinstance(spec, HttpServerSpec):  # a forbidden target or unresolvable reference: refused now
                spec = self._admit_url(spec)
            else:  # an unresolvable reference refused now; the plan scans the workspace: off the event loop
                secrets.resolve_env(spec.secret_env, checked, self.settings.secret_env_allow, os.environ, operator=False)
                await anyio.to_thread.run_sync(self._refuse_unrunnable, checked, spec)
            before = self.registry.dynamic().get(checked)
            # The lock may be held by another bridge process: wait for it off the event loop.
            replaced = await anyio.to_thread.run_sync(self.registry.add, checked, spec)
            await self.runtime.run_async(lambda: self.sessions.evict(checked))
            if not _keeps_home(before, spec):
                await anyio.to_thread.run_sync(self._drop_home, checked)  # another program: a fresh home
            origin: Origin = "dynamic (shadows config)" if checked in self.registry.config_servers else "dynamic"
            data = AddResult(server=_info(checked, spec, origin), replaced=replaced)
            verb = "Replaced" if replaced else "Added"
            kind = spec.transport
            if isinstance(spec, StdioServerSpec):
                kind += f", runs {data.server.target}" + "".join(f", {var}={ref}" for var, ref in spec.secret_env.items())
            text = f"{verb} {checked} ({kind}). Call mcp_list_tools(server={checked!r}) to see its tools."
            return Reply(text=text, data=data)

        return await self._reply("mcp_add_server", build, server=name)

    async def remove_server_async(self, name: str) -> Reply:
        async def build() -> Reply:
            require_dynamic(self.settings)
            checked = validation.server_name(name)
            spec = self.registry.dynamic().get(checked)
            restored = await anyio.to_thread.run_sync(self.registry.remove, checked)
            await self.runtime.run_async(lambda: self.sessions.evict(checked))
            await anyio.to_thread.run_sync(self._drop_home, checked)
            shadowed = self.registry.config_servers.get(checked)
            if isinstance(spec, HttpServerSpec) and not (isinstance(shadowed, HttpServerSpec) and shadowed.url == spec.url):
                # A removed server's sign-in is forgotten with it, its URL's only: the developer's
                # sign-in to the config entry it shadowed stays (the same URL's too: it is theirs).
                self.tokens(checked, spec).forget()
            text = f"Removed {checked}." + (" The developer's config entry of that name applies again." if restored else "")
            return Reply(text=text, data=RemoveResult(name=checked, restored_config_entry=restored))

        return await self._reply("mcp_remove_server", build, server=name)
