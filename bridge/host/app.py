"""The FastMCP app: the four tools registered with their host-facing signatures and schemas.

`bridge.host` is the only package that knows FastMCP's server side (`shapes` shapes `tools/list`
per client, `stdio` and `http` serve); the tools themselves are the plain async methods of
`bridge.tools.Bridge`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

import mcp_types as mt
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ValidationError as ArgumentError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import Tool, ToolResult
from fastmcp.tools.base import InputRequiredToolResult
from mcp_types import ToolAnnotations
from pydantic import Field, ValidationError

from bridge import __version__
from bridge.host import calls, schemas, shapes
from bridge.host.channel import FastMCPChannel
from bridge.models import (
    AddResult,
    CallResult,
    InputRequested,
    RemoveResult,
    SearchResult,
    ServerList,
    ToolCatalog,
    ToolSchema,
)
from bridge.tools import Bridge, Reply

if TYPE_CHECKING:
    from fastmcp.server.auth import AuthProvider

INSTRUCTIONS = (
    "This server reaches other MCP servers through four tools. Always call mcp_list_tools first: "
    "without a server it lists the registered servers; with a server it lists that server's tools; "
    "with a query it ranks the tools of every server for it (search first when you do not know the server); "
    "with a tool_name it shows that tool's full input schema. Never guess server names, tool names or "
    "arguments: call mcp_call_tool only with a tool name and arguments_json taken from that listing. "
    "Errors carry a code; retry only those marked retryable."
)


def _add(app: FastMCP, fn: Callable[..., Awaitable[ToolResult]], **definition: Any) -> None:
    """Register `fn` as a tool whose optional parameters are listed lean (`schemas.lean_input`)."""
    tool = Tool.from_function(fn, name=fn.__name__, **definition)
    app.add_tool(tool.model_copy(update={"parameters": schemas.lean_input(tool.parameters)}))


def _result(reply: Reply) -> ToolResult:
    """The reply as FastMCP's tools return it; `calls.wire_result` decides what it holds."""
    wire = calls.wire_result(reply)
    if isinstance(wire, mt.InputRequiredResult):  # a 2026-07-28 host answers the server's asks, then calls again
        return InputRequiredToolResult(wire)
    result = mt.CallToolResult.model_validate(wire)
    return ToolResult(content=result.content, structured_content=result.structured_content, is_error=result.is_error)


class ArgumentErrors(Middleware):
    """FastMCP's own argument checks (a wrong JSON type, a missing or unknown field) as `invalid_argument`
    (FastMCP answers with pydantic's text, which quotes each value, and no structured content)."""

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        except ArgumentError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            return _result(calls.invalid_arguments(context.message.name, exc.__cause__))


def build_app(bridge: Bridge, auth: AuthProvider | None = None) -> FastMCP:
    """The bridge's FastMCP app; `auth` guards HTTP mode (stdio trusts the process that spawned it).

    Each tool's description is given, not taken from a docstring: FastMCP parses docstrings with
    griffe, which costs the start ~35 ms to import.
    """
    app = FastMCP(
        "mcp-bridge",
        version=__version__,
        instructions=INSTRUCTIONS,
        middleware=[shapes.ToolShapeMiddleware(bridge.settings.tool_shape), ArgumentErrors()],
        auth=auth,
    )

    async def mcp_list_tools(
        ctx: Context,
        server: str | None = None,
        tool_name: str | None = None,
        query: str | None = None,
        limit: Annotated[int | None, Field(description="Matches, 1-50 (10).")] = None,
    ) -> ToolResult:
        channel = FastMCPChannel(ctx)
        return _result(await bridge.list_tools_async(server, tool_name, channel=channel, query=query, limit=limit))

    _add(
        app,
        mcp_list_tools,
        title="List MCP servers and tools",
        description="List the registered MCP servers; with server, its tools; with server and tool_name, that tool's "
        "input schema; with query, the tools of every server ranked for it. Unsure of the server? Search first, then "
        "read the schema, then call. Never guess a name or an argument: take them from here.",
        annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True),
        output_schema=schemas.envelope(ServerList, ToolCatalog, ToolSchema, SearchResult),
    )
    app.add_tool(calls.listed(schemas.envelope(CallResult, InputRequested)))

    if bridge.settings.allow_dynamic:

        async def mcp_add_server(
            name: Annotated[str, Field(description="Letters, digits, _ and -, at most 64.")],
            url: str | None = None,
            headers_json: Annotated[
                str | None, Field(description='A JSON object of strings, e.g. {"Authorization": "Bearer ..."}.')
            ] = None,
            command: Annotated[str | None, Field(description="A program on PATH (e.g. npx) or its absolute path.")] = None,
            args_json: Annotated[str | None, Field(description="A JSON array of strings.")] = None,
            cwd: Annotated[str | None, Field(description="Inside the workspace.")] = None,
            env_json: Annotated[
                str | None, Field(description='{"API_KEY": "${env:API_KEY}"}: references the operator allows, never values.')
            ] = None,
        ) -> ToolResult:
            return _result(await bridge.add_server_async(name, url, headers_json, command, args_json, cwd, env_json))

        async def mcp_remove_server(name: str) -> ToolResult:
            return _result(await bridge.remove_server_async(name))

        changes = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)
        _add(
            app,
            mcp_add_server,
            title="Register an MCP server",
            description="Register (or replace) a server by name: a url (Streamable HTTP, with headers_json), or a "
            "command (with args_json, cwd, env_json) run as a local stdio server in a sandbox; not both.",
            annotations=changes,
            output_schema=schemas.envelope(AddResult),
        )
        _add(
            app,
            mcp_remove_server,
            title="Remove a registered MCP server",
            description="Remove a server added in conversation (a server the developer configured stays).",
            annotations=changes,
            output_schema=schemas.envelope(RemoveResult),
        )

    calls.answer_directly(app, bridge)
    return app
