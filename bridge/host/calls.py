"""`tools/call` of `mcp_call_tool`, answered without FastMCP's tool machinery.

A warm bridged call spent about 0.4 ms of the bridge's ~2 ms of CPU between the SDK's `tools/call`
handler and the tool body: FastMCP's middleware chain, its provider lookup and visibility
transforms, dependency injection, a pydantic model of the signature, and two result conversions.
`mcp_call_tool` is the call a conversation makes again and again, so its `tools/call` goes from
the SDK's handler straight to `Bridge.call_tool_async`. FastMCP still lists it (`listed`, its input
schema made from `CallArguments` the way FastMCP makes one from a signature) and still runs the
other three tools; the SDK's per-request work (era, request-state sealing, FastMCP's request seam)
is untouched.
"""

from __future__ import annotations

from typing import Any

import mcp_types as mt
from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import bind_request_context
from fastmcp.tools import Tool
from fastmcp.utilities.json_schema import compress_schema
from mcp.server.context import ServerRequestContext
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bridge import internals
from bridge.errors import BridgeError, describe_validation
from bridge.host import schemas
from bridge.host.channel import FastMCPChannel
from bridge.tools import Bridge, Reply, output

TOOL = "mcp_call_tool"
DESCRIPTION = (
    "Call a tool of a registered server with the arguments its schema (from mcp_list_tools) asks for. A result "
    "cut to the budget ends with a marker naming result_handle and offset: call again with both to read on. "
    'tool_name "resources/read" with arguments_json {"uri": ...} reads a resource the server listed or linked.'
)


class CallArguments(BaseModel):
    """`mcp_call_tool`'s arguments: what it advertises and what it accepts, both from here (the tool's
    description says what each is for; `schemas` says why none repeats it)."""

    model_config = ConfigDict(extra="forbid")

    server: str
    tool_name: str
    arguments_json: str | dict[str, Any] = Field("{}", description="A JSON object, or its text.")
    result_handle: str | None = None
    offset: int | None = None


def listed(output_schema: dict[str, Any]) -> Tool:
    """The tool FastMCP lists; it never runs it (`answer_directly` takes its calls first)."""
    return Tool(
        name=TOOL,
        title="Call a tool on an MCP server",
        description=DESCRIPTION,
        parameters=_input_schema(),
        output_schema=output_schema,
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True),
    )


async def call(bridge: Bridge, arguments: CallArguments, ctx: Context) -> Reply:
    """Run one `mcp_call_tool` for the host request behind `ctx`."""
    return await bridge.call_tool_async(
        arguments.server,
        arguments.tool_name,
        arguments.arguments_json,
        channel=FastMCPChannel(ctx),
        result_handle=arguments.result_handle,
        offset=arguments.offset,
        input_responses=ctx.input_responses,
        request_state=ctx.request_state,
    )


def invalid_arguments(tool: str, error: ValidationError) -> Reply:
    """A wrong JSON type, a missing or an unknown field as `invalid_argument`, naming the field and
    what is wrong only: pydantic's own text quotes each value (a header secret, for one)."""
    data = BridgeError("invalid_argument", f"Invalid arguments for {tool}: {describe_validation(error)}.").to_result()
    return Reply(text=output.error(data), data=data)


def wire_result(reply: Reply) -> dict[str, Any] | mt.InputRequiredResult:
    """The reply as the SDK sends it: a 2026-07-28 host's asks as `input_required`. A result as
    the wire mapping, which the SDK validates against the host's protocol version anyway: as a
    `CallToolResult`, its blocks were built and dumped once more on the way."""
    if reply.input_required is not None:
        return reply.input_required
    blocks = [block.model_dump(by_alias=True, mode="json", exclude_none=True) for block in reply.blocks]
    return {
        "content": [{"type": "text", "text": reply.text}, *blocks],
        "structuredContent": reply.data.model_dump(mode="json", exclude_none=True),
        "isError": reply.is_error,
        "resultType": "complete",  # 2026-07-28 requires it; the handshake era's schema drops it
    }


def _input_schema() -> dict[str, Any]:
    """As FastMCP makes one from a signature: no titles, and no description of the whole."""
    schema = compress_schema(CallArguments.model_json_schema(), prune_titles=True)
    return schemas.lean_input({key: value for key, value in schema.items() if key != "description"})


def answer_directly(app: FastMCP, bridge: Bridge) -> None:
    """Route `tools/call` of `mcp_call_tool` to `call`; any other name to FastMCP's handler."""
    server = internals.lowlevel_server(app)
    fastmcp_entry = server.get_request_handler("tools/call")
    assert fastmcp_entry is not None, "FastMCP registers tools/call"
    fastmcp_handler = fastmcp_entry.handler

    async def on_call_tool(
        ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult | mt.InputRequiredResult | dict[str, Any]:
        if params.name != TOOL:
            return await fastmcp_handler(ctx, params)
        try:
            arguments = CallArguments.model_validate(params.arguments or {})
        except ValidationError as exc:
            return wire_result(invalid_arguments(TOOL, exc))
        # Bound again: the SDK's request-state boundary, inside FastMCP's seam, hands the handler a
        # context whose request_state it has unsealed.
        with bind_request_context(ctx):
            async with Context(fastmcp=app) as fastmcp_ctx:
                return wire_result(await call(bridge, arguments, fastmcp_ctx))

    server.add_request_handler("tools/call", fastmcp_entry.params_type, on_call_tool)
