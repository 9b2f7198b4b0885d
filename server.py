"""The FastMCP app: registers the four tools and serves them over stdio or Streamable HTTP.

This is the only module that knows FastMCP's server side (with `shapes`, which shapes `tools/list`
per client, and `stdio_eras`, which serves stdio); the tools themselves are the plain methods of
`bridge.tools.Bridge`. In stdio mode stdout is the protocol: logs go to stderr.

HTTP mode is meant to sit behind a tunnel, where anyone can reach it: Host and Origin are checked on
every request (DNS rebinding), a bearer token (`MCP_AUTH_TOKEN`) or an OAuth provider passed to
`main(auth=...)` guards it, and without either it binds to loopback only.
"""

from __future__ import annotations

import argparse
import copy
import hmac
import ipaddress
import logging
import socket
import sys
from typing import Annotated, Any, Union

import mcp_types as mt
import uvicorn.config
from fastmcp import FastMCP
from fastmcp.exceptions import ValidationError as ArgumentError
from fastmcp.server.auth import AuthProvider
from fastmcp.server.auth.providers.debug import DebugTokenVerifier
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools import ToolResult
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

import config
import shapes
import stdio_eras
from bridge import output
from bridge.models import AddResult, BridgeError, CallResult, ErrorResult, RemoveResult, ServerList, ToolCatalog, ToolSchema
from bridge.tools import Bridge, Reply

INSTRUCTIONS = (
    "This server reaches other MCP servers through four tools. Always call mcp_list_tools first: "
    "without a server it lists the registered servers; with a server it lists that server's tools; "
    "with a tool_name it shows that tool's full input schema. Never guess server names, tool names or "
    "arguments: call mcp_call_tool only with a tool name and arguments_json taken from that listing. "
    "Errors carry a code; retry only those marked retryable."
)


def output_schema(*success: type[BaseModel]) -> dict[str, Any]:
    """One object schema admitting each success shape and the error shape."""
    models = (*success, ErrorResult)
    schema = TypeAdapter(Union[models]).json_schema(mode="serialization")  # noqa: UP007 - built at runtime
    return {"type": "object", **schema}


def _result(reply: Reply) -> ToolResult:
    return ToolResult(
        content=reply.text, structured_content=reply.data.model_dump(mode="json", exclude_none=True), is_error=reply.is_error
    )


class ArgumentErrors(Middleware):
    """FastMCP's own argument checks (a wrong JSON type, a missing or unknown field) as `invalid_argument`.

    FastMCP answers those with pydantic's text, which quotes each value (`input_value`: a header
    secret, for one) and carries no structured content: this names the field and what is wrong only.
    """

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
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
                for error in exc.__cause__.errors(include_url=False, include_input=False)
            )
            data = BridgeError("invalid_argument", f"Invalid arguments for {context.message.name}: {problems}.").to_result()
            return ToolResult(content=output.error(data), structured_content=data.model_dump(mode="json"), is_error=True)


ServerName = Annotated[str, Field(description="A registered server's name (from mcp_list_tools without arguments).")]


def build_app(bridge: Bridge, auth: AuthProvider | None = None) -> FastMCP:
    """The bridge's FastMCP app; `auth` guards HTTP mode (stdio trusts the process that spawned it)."""
    app = FastMCP(
        "mcp-bridge",
        instructions=INSTRUCTIONS,
        middleware=[shapes.ToolShapeMiddleware(bridge.settings.tool_shape), ArgumentErrors()],
        auth=auth,
    )

    @app.tool(
        name="mcp_list_tools",
        title="List MCP servers and tools",
        annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True),
        output_schema=output_schema(ServerList, ToolCatalog, ToolSchema),
    )
    async def mcp_list_tools(
        server: Annotated[str | None, Field(description="Omit to list the registered servers.")] = None,
        tool_name: Annotated[str | None, Field(description="Give with server for one tool's full schema.")] = None,
    ) -> ToolResult:
        """List the registered MCP servers, one server's tools (compact catalog), or one tool's full schema."""
        return _result(await bridge.list_tools_async(server, tool_name))

    @app.tool(
        name="mcp_call_tool",
        title="Call a tool on an MCP server",
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True),
        output_schema=output_schema(CallResult),
    )
    async def mcp_call_tool(
        server: ServerName,
        tool_name: Annotated[str, Field(description="A tool name exactly as mcp_list_tools shows it.")],
        arguments_json: Annotated[
            str, Field(description='The tool\'s arguments as a JSON object text, e.g. {"path": "README.md"}.')
        ] = "{}",
    ) -> ToolResult:
        """Call one tool on a registered MCP server. List the server's tools first; never guess names or arguments."""
        return _result(await bridge.call_tool_async(server, tool_name, arguments_json))

    if bridge.settings.allow_dynamic:

        @app.tool(
            name="mcp_add_server",
            title="Register an MCP server",
            annotations=ToolAnnotations(
                readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
            ),
            output_schema=output_schema(AddResult),
        )
        async def mcp_add_server(
            name: Annotated[str, Field(description="Letters, digits, _ and -, at most 64.")],
            url: Annotated[str | None, Field(description="A Streamable HTTP endpoint (http:// or https://).")] = None,
            headers_json: Annotated[
                str | None, Field(description='HTTP headers as a JSON object of strings, e.g. {"Authorization": "Bearer ..."}.')
            ] = None,
            command: Annotated[str | None, Field(description="Absolute path of a local stdio server program.")] = None,
            args_json: Annotated[str | None, Field(description='Its arguments as a JSON array of strings.')] = None,
            cwd: Annotated[str | None, Field(description="Its working directory, inside the workspace.")] = None,
        ) -> ToolResult:
            """Register (or replace) a server: a url for HTTP, or a command for a local stdio server, not both."""
            return _result(await bridge.add_server_async(name, url, headers_json, command, args_json, cwd))

        @app.tool(
            name="mcp_remove_server",
            title="Remove a registered MCP server",
            annotations=ToolAnnotations(
                readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
            ),
            output_schema=output_schema(RemoveResult),
        )
        async def mcp_remove_server(name: ServerName) -> ToolResult:
            """Remove a server added in conversation; servers the developer provisioned cannot be removed."""
            return _result(await bridge.remove_server_async(name))

    return app


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mcp-bridge", description="Serve the MCP bridge over stdio (default) or HTTP.")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default: loopback only)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    return parser.parse_args(argv)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bearer_token_auth(token: str) -> AuthProvider:
    """FastMCP's verifier with a constant-time comparison (its StaticTokenVerifier looks tokens up in a dict)."""
    expected = token.encode()
    return DebugTokenVerifier(validate=lambda offered: hmac.compare_digest(offered.encode(), expected), client_id="host")


def main(argv: list[str] | None = None, *, auth: AuthProvider | None = None) -> int:
    """Run the bridge. `auth` is for launchers that bring a FastMCP OAuth provider (see README)."""
    args = _parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        settings = config.Settings()
    except ValidationError as exc:
        print(f"mcp-bridge: invalid configuration: {config.describe_error(exc)}", file=sys.stderr)
        return 2
    if settings.auth_token is not None:
        if auth is not None:
            print("mcp-bridge: MCP_AUTH_TOKEN and an auth provider are both set; choose one.", file=sys.stderr)
            return 2
        auth = _bearer_token_auth(settings.auth_token.get_secret_value())
    if args.transport == "http" and not _is_loopback(args.host) and auth is None:
        print(
            f"mcp-bridge: refusing to serve on {args.host} without authentication; set MCP_AUTH_TOKEN "
            "(or bind to 127.0.0.1 and use a tunnel).",
            file=sys.stderr,
        )
        return 2
    try:
        bridge = Bridge(settings, config.MCP_SERVERS)
    except ValueError as exc:
        print(f"mcp-bridge: invalid configuration: {exc}", file=sys.stderr)
        return 2
    app = build_app(bridge, auth)
    try:
        if args.transport == "http":
            _serve_http(app, args.host, args.port, settings)
        else:
            # Served on the worker loop itself: a tool call then awaits its downstream session
            # there, with no hop between threads (uvicorn keeps the main thread for its signals).
            try:
                bridge.runtime.run(lambda: stdio_eras.serve_stdio(app))
            except KeyboardInterrupt:  # Ctrl-C: closing the bridge below stops serving and every child
                return 130
    finally:
        bridge.close()
    return 0


def _serve_http(app: FastMCP, host: str, port: int, settings: config.Settings) -> None:
    """Bind first, so `--port 0` works and the log line names the real port; uvicorn logs go to stderr.

    Host/Origin protection is strict: loopback names, the bound address and `MCP_ALLOWED_HOSTS` are
    the only Host values served (others get 421); a browser Origin must be same-origin, loopback or in
    `MCP_ALLOWED_ORIGINS` (others get 403).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    log = logging.getLogger("mcp_bridge")
    log.info("serving Streamable HTTP at http://%s:%d/mcp", host, bound)
    log.info(
        "authentication: %s; extra allowed Host names: %s",
        "required" if app.auth is not None else "none (loopback only)",
        ", ".join(settings.allowed_hosts) or "none (set MCP_ALLOWED_HOSTS to your tunnel's host name)",
    )
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    app.run(
        transport="http",
        host=host,
        port=bound,
        path="/mcp",
        show_banner=False,
        sockets=[sock],
        uvicorn_config={"log_config": log_config},
        host_origin_protection=True,
        allowed_hosts=list(settings.allowed_hosts),
        allowed_origins=list(settings.allowed_origins),
    )


if __name__ == "__main__":
    sys.exit(main())
