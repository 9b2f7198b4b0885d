"""`mcp-bridge probe NAME`: connect to a server and say, for each tool, what `mcp_call_tool` does
with it (the BRIDGE column) and, apart, what a host connected to the server directly would make of it.

Through the bridge a host sees only the bridge's own four tools, so a tool's schema dialect, name or
task-only execution matter to `mcp_call_tool` alone: it calls the tool, runs it as a task, or
refuses it (the tool policy, a task-only tool on a server that runs no tasks the bridge can drive),
and pages any result over the budget. For a host connected directly, a finding is a *drop* when the
host is known to refuse the tool (or the whole server), and a *warning* when the tool is accepted
but falls short of what the host is reported to want (`RULES`). Sources: the research notes on
hosts (ChatGPT, Claude) and `shapes.py`.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from typing import Any, Literal

import mcp_types as types
from jsonschema import Draft7Validator, Draft202012Validator, SchemaError
from jsonschema.validators import validator_for
from pydantic import BaseModel, Field

from bridge.cli.context import load_settings, open_bridge, succeeded
from bridge.cli.errors import CliError, Exit, add_command
from bridge.cli.render import table
from bridge.errors import BridgeError
from bridge.tools import Bridge
from bridge.wording import count, escaped, shown_name

Host = Literal["chatgpt", "claude"]
HOSTS: tuple[Host, ...] = ("chatgpt", "claude")
CLAUDE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
CLAUDE_MAX_INPUT_SCHEMA_BYTES = 16 * 1024
ANNOTATIONS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
RULES = """\
BRIDGE (what mcp_call_tool does with the tool; a result over MCP_MAX_CHARS is paged with result_handle)
  call: called as it is; task: run as a task (execution.taskSupport "required") and waited for;
  refused: the tool policy refuses it, or it runs only as a task and the server offers no tasks the
  bridge can drive.
Hosts connected to the server directly, not through the bridge:
ChatGPT
  drop: an inputSchema / outputSchema that is not a valid object schema in its declared dialect
        (2020-12 when none is declared), or tuple-form `items` (ChatGPT's validator rejects those
        and the whole connector fails to create); `execution.taskSupport: "required"`.
  warn: short of the complete shape ChatGPT is reported to want: a title, all four annotations
        set explicitly, an outputSchema, both schemas declaring draft-07, `taskSupport: "forbidden"`.
Claude (Claude Desktop, Claude Code, claude.ai)
  drop: a name outside ^[a-zA-Z0-9_-]{1,64}$ (Claude then withholds every tool of the server); an
        inputSchema that is not a valid 2020-12 object schema or is over 16,384 bytes serialized;
        an outputSchema declaring another dialect (Claude Code takes 2020-12 only) or invalid;
        `execution.taskSupport: "required"` (the host runs no tasks).
  warn: an inputSchema declaring another dialect (Claude reads it as 2020-12).
"""
TASK_ONLY = "execution.taskSupport is 'required': it runs only as a task, which this host does not run"


class Verdict(BaseModel):
    drops: list[str] = Field(default_factory=list, description="Why the host would refuse the tool.")
    warnings: list[str] = Field(default_factory=list, description="Accepted, but short of what the host wants.")

    @property
    def status(self) -> str:
        return "DROP" if self.drops else "warn" if self.warnings else "ok"


class BridgeUse(BaseModel):
    """What `mcp_call_tool` does with the tool (any result over the budget is paged)."""

    use: Literal["call", "task", "refused"]
    reason: str | None = Field(None, description="Why it is refused.")


class ToolVerdicts(BaseModel):
    name: str
    bridge: BridgeUse
    hosts: dict[Host, Verdict] = Field(description="What each host connected to the server directly would make of it.")


class ProbeReport(BaseModel):
    server: str
    tools: list[ToolVerdicts]
    failed: bool = Field(
        description="True when mcp_call_tool refuses a tool, or a host named with --host would drop one (with "
        "--strict: any host, and on a warning too)."
    )


# -- schema facts -------------------------------------------------------------------------------

_SUBSCHEMA = (
    "items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else", "propertyNames"
)
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _subschemas(schema: object) -> Iterator[dict[str, Any]]:
    """The schema and every schema inside it, by keyword position (never inside `default` or `enum` values)."""
    if not isinstance(schema, dict):
        return
    yield schema
    for key in _SUBSCHEMA:
        value = schema.get(key)
        for item in value if isinstance(value, list) else [value]:
            yield from _subschemas(item)
    for key in _SUBSCHEMA_LISTS:
        for item in schema.get(key) or []:
            yield from _subschemas(item)
    for key in _SUBSCHEMA_MAPS:
        mapping = schema.get(key)
        if isinstance(mapping, dict):
            for item in mapping.values():
                yield from _subschemas(item)


def _has_tuple_items(schema: object) -> bool:
    return any(isinstance(sub.get("items"), list) for sub in _subschemas(schema))


def _dialect(schema: dict[str, Any]) -> type:
    """The validator of the dialect a schema declares; 2020-12 (MCP's default) when none or an unknown one."""
    declared = schema.get("$schema")
    return validator_for({"$schema": declared} if isinstance(declared, str) else {}, default=Draft202012Validator)


def _declared_non_2020_12(schema: object) -> str | None:
    """The `$schema` a schema declares when it is anything but 2020-12 (strict clients refuse those)."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return None
    declared = schema["$schema"]
    if isinstance(declared, str) and declared.rstrip("#") == "https://json-schema.org/draft/2020-12/schema":
        return None
    return str(declared)


def _invalid(schema: object, label: str, dialect: type | None = None) -> list[str]:
    """Why `schema` is not a valid object schema in `dialect` (default: the one it declares)."""
    if not isinstance(schema, dict):
        return [f"{label} is not a JSON object"]
    problems = [] if schema.get("type") == "object" else [f"{label} is not of type object"]
    validator = dialect or _dialect(schema)
    name = {Draft7Validator: "draft-07", Draft202012Validator: "2020-12"}.get(validator, validator.__name__)
    try:
        validator.check_schema(schema)
    except SchemaError as exc:
        problems.append(f"{label} is not a valid {name} schema at {exc.json_path}: {exc.message[:160]}")
    return problems


# -- the hosts ------------------------------------------------------------------------------------


def _task_support(tool: dict[str, Any]) -> object:
    execution = tool.get("execution")
    return execution.get("taskSupport") if isinstance(execution, dict) else None


def check_chatgpt(tool: dict[str, Any]) -> Verdict:
    verdict = Verdict()
    input_schema, output_schema = tool.get("inputSchema"), tool.get("outputSchema")
    if _task_support(tool) == "required":
        verdict.drops.append(TASK_ONLY)
    for label, schema in (("inputSchema", input_schema), ("outputSchema", output_schema)):
        if schema is None and label == "outputSchema":
            continue
        if _has_tuple_items(schema):
            verdict.drops.append(f"{label} uses tuple-form items (an array): ChatGPT fails to create the connector")
        else:
            verdict.drops += _invalid(schema, label)
    if not tool.get("title"):
        verdict.warnings.append("no title")
    annotations = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    unset = [name for name in ANNOTATIONS if not isinstance(annotations.get(name), bool)]
    if unset:
        verdict.warnings.append(f"annotations not set explicitly: {', '.join(unset)}")
    if output_schema is None:
        verdict.warnings.append("no outputSchema")
    for label, schema in (("inputSchema", input_schema), ("outputSchema", output_schema)):
        if isinstance(schema, dict) and _dialect(schema) is not Draft7Validator:
            verdict.warnings.append(f"{label} does not declare draft-07")
    if _task_support(tool) not in ("forbidden", "required"):
        verdict.warnings.append("execution.taskSupport is not declared 'forbidden'")
    return verdict


def check_claude(tool: dict[str, Any]) -> Verdict:
    verdict = Verdict()
    input_schema, output_schema = tool.get("inputSchema"), tool.get("outputSchema")
    if not CLAUDE_NAME.fullmatch(str(tool.get("name", ""))):
        verdict.drops.append(f"name does not match {CLAUDE_NAME.pattern}: Claude withholds every tool of this server")
    if _task_support(tool) == "required":
        verdict.drops.append(TASK_ONLY)
    verdict.drops += _invalid(input_schema, "inputSchema", Draft202012Validator)
    size = len(json.dumps(input_schema, separators=(",", ":"), ensure_ascii=False).encode())
    if size > CLAUDE_MAX_INPUT_SCHEMA_BYTES:
        limit = CLAUDE_MAX_INPUT_SCHEMA_BYTES
        verdict.drops.append(f"inputSchema is {size:,} bytes serialized, over Claude's {limit:,}")
    if output_schema is not None:
        declared = _declared_non_2020_12(output_schema)
        if declared:
            verdict.drops.append(f"outputSchema declares {declared}; Claude Code accepts 2020-12 only")
        verdict.drops += _invalid(output_schema, "outputSchema", Draft202012Validator)
    declared = _declared_non_2020_12(input_schema)
    if declared:
        verdict.warnings.append(f"inputSchema declares {declared}; Claude reads schemas as 2020-12")
    return verdict


CHECKS = {"chatgpt": check_chatgpt, "claude": check_claude}


def bridge_use(tool: types.Tool, refused: str | None) -> BridgeUse:
    """What `mcp_call_tool` does with `tool`, given why the bridge's catalog refuses it (if it does)."""
    if refused is not None:
        return BridgeUse(use="refused", reason=refused)
    task_only = tool.execution is not None and tool.execution.task_support == "required"
    return BridgeUse(use="task" if task_only else "call")


def check(tools: list[types.Tool], hosts: tuple[Host, ...], refusals: dict[str, str | None]) -> list[ToolVerdicts]:
    """Each tool through the bridge, and as a host connected directly receives it (its wire JSON)
    against each host's rules."""
    verdicts = []
    for tool in tools:
        wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        hosts_verdicts = {host: CHECKS[host](wire) for host in hosts}
        verdicts.append(ToolVerdicts(name=tool.name, bridge=bridge_use(tool, refusals.get(tool.name)), hosts=hosts_verdicts))
    return verdicts


# -- the command -------------------------------------------------------------------------------


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    probe = add_command(
        commands,
        "probe",
        "say what mcp_call_tool does with a server's tools, and what hosts connected directly accept",
        "Connect to a registered server, list its tools and say for each one what mcp_call_tool does\n"
        "with it (BRIDGE: call, task or refused), then what ChatGPT and Claude would make of it if\n"
        "connected to the server directly, not through the bridge: one row per tool, then the reasons.\n"
        "DROP: that host refuses the tool (or the whole server); warn: accepted, but short of what the\n"
        "host is reported to want. Exits 1 when mcp_call_tool refuses a tool, or when a host named\n"
        "with --host would drop one (with --strict: any host, and on a warning too).\n\n" + RULES,
    )
    probe.add_argument("name", help="a registered server's name")
    probe.add_argument(
        "--host", action="append", choices=HOSTS, help="a host you connect to the server directly: check only it, and fail on its drops (repeatable)"
    )
    probe.add_argument("--strict", action="store_true", help="fail on any host's drops and warnings (e.g. the complete ChatGPT shape)")
    probe.add_argument("--timeout", type=float, help="seconds to start, connect and list (default: MCP_START_TIMEOUT, then MCP_TIMEOUT)")
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.set_defaults(run=run_probe)


def fetch_tools(bridge: Bridge, name: str) -> tuple[list[types.Tool], dict[str, str | None]]:
    """The server's full tool definitions, reached exactly as mcp_list_tools reaches them, and why
    the bridge refuses each tool it refuses."""
    catalog = succeeded(bridge.list_tools(name))  # validates, resolves and connects, with the tool's errors
    try:
        tools = bridge.tool_definitions(name)  # the session's cached list
    except BridgeError as exc:
        raise CliError.from_result(exc.to_result()) from None
    return tools, {tool.name: tool.refused for tool in catalog.tools}


def render(report: ProbeReport, hosts: tuple[Host, ...]) -> str:
    """One row per tool, then each distinct reason once with the tools it applies to."""
    header = ["TOOL", "BRIDGE", *(host.upper() for host in hosts)]
    rows = [[tool.name, tool.bridge.use, *(tool.hosts[host].status for host in hosts)] for tool in report.tools]
    lines = [table(rows, header)]
    reasons: dict[str, list[str]] = {}
    for tool in report.tools:
        if tool.bridge.reason is not None:
            reasons.setdefault(f"bridge refused: {tool.bridge.reason}", []).append(tool.name)
    for host in hosts:
        for kind, label in (("drops", "DROP"), ("warnings", "warn")):
            for tool in report.tools:
                for reason in getattr(tool.hosts[host], kind):
                    reasons.setdefault(f"{host} {label}: {reason}", []).append(tool.name)
    for reason, names in reasons.items():
        lines += ["", escaped(reason), f"  {', '.join(shown_name(name) for name in names)}"]
    uses = {use: sum(tool.bridge.use == use for tool in report.tools) for use in ("call", "task", "refused")}
    through = f"mcp_call_tool calls {uses['call']}, runs {uses['task']} as a task, refuses {uses['refused']}"
    dropped = {host: sum(bool(tool.hosts[host].drops) for tool in report.tools) for host in hosts}
    directly = ", ".join(f"{host} would drop {count}" for host, count in dropped.items())
    lines += [
        "",
        f"{report.server}: {count(len(report.tools), 'tool')}; {through}; connected directly, {directly}",
        "(BRIDGE: what mcp_call_tool does, any result over MCP_MAX_CHARS paged; "
        f"{', '.join(host.upper() for host in hosts)}: a host connected to the server directly, not through the bridge)",
    ]
    return "\n".join(lines)


def run_probe(args: argparse.Namespace) -> int:
    hosts: tuple[Host, ...] = tuple(dict.fromkeys(args.host)) if args.host else HOSTS
    settings = load_settings(**({"timeout": args.timeout, "start_timeout": args.timeout} if args.timeout is not None else {}))
    with open_bridge(settings) as bridge:
        tools, refusals = fetch_tools(bridge, args.name)
    verdicts = check(tools, hosts, refusals)
    judged_directly = args.host is not None or args.strict  # else the host columns inform, the bridge decides
    failed = any(tool.bridge.use == "refused" for tool in verdicts) or judged_directly and any(
        verdict.drops or (args.strict and verdict.warnings) for tool in verdicts for verdict in tool.hosts.values()
    )
    report = ProbeReport(server=args.name, tools=verdicts, failed=failed)
    print(report.model_dump_json(indent=2) if args.json else render(report, hosts))
    return Exit.CHECK_FAILED if failed else Exit.OK
