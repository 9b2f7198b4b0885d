"""A sketch, not the bridge: what a warm `mcp_call_tool` costs when no SDK session serves it.

Run: .venv/bin/python bench/lean_sketch.py [--calls 400]

It reads a warm call to the FastMCP echo in alternating blocks, on both faces: made directly,
through the bridge, and through `Sketch` in the bridge's place, its child reached two ways:
`lean` writes the child's `tools/call` line itself and matches the answer by id; `lean, SDK
child` calls the child through the SDK's `Client`. For the call the sketch does what the bridge
must: it validates the arguments with the bridge's `CallArguments`, checks the answer as a
`CallToolResult`, builds the bridge's `CallResult`, queues an `AuditEntry`, and lists the bridge's
own tools, so the host's client checks the same output schema. It does nothing else: no policy,
pool, relay of asks or progress, era rules or cancellation; any other message goes to the child
as it is. The HTTP face is uvicorn (httptools) and Starlette, as the bridge's is.

It is the evidence behind #16's question (keep the SDK's sessions on the warm path, or not), kept
so that the figures can be read again; the bridge does not use it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types as mt
import uvicorn
from bench_bridge import BRIDGE, ECHO, add, bridged_echo, echo_call, interleaved, serving
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from raw_relay import LIMIT, stdio_streams
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bridge.host.calls import CallArguments
from bridge.host.http import bind
from bridge.models import CallResult
from bridge.tools.audit import AuditEntry

Message = dict[str, Any]


class RawChild:
    """The child's stdin and stdout, one request at a time, answers matched by id."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin, self._stdout = process.stdin, process.stdout
        self._lock = asyncio.Lock()
        self._ids = iter(range(1 << 62))

    async def send(self, message: Message) -> Message | None:
        """The answer to a request; None for a notification."""
        async with self._lock:
            self._stdin.write(json.dumps(message).encode() + b"\n")
            await self._stdin.drain()
            if "id" not in message:
                return None
            while line := await self._stdout.readline():
                answer = json.loads(line)
                if answer.get("id") == message["id"] and "method" not in answer:
                    return answer
        raise ConnectionError("the server's stdout ended")

    async def call_tool(self, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> mt.CallToolResult:
        request = {"jsonrpc": "2.0", "id": f"lean-{next(self._ids)}", "method": "tools/call"}
        answer = await self.send(request | {"params": {"name": name, "arguments": arguments, "_meta": meta}})
        assert answer is not None
        return mt.CallToolResult.model_validate(answer["result"])


class Sketch:
    """`mcp_call_tool` answered as the bridge must, everything else passed to the child."""

    def __init__(self, child: RawChild, tools: list[Message], sdk_child: Client | None) -> None:
        self.child = child
        self.tools = tools
        self.sdk_child = sdk_child
        self.audit: queue.Queue[AuditEntry] = queue.Queue()  # never drained: a put is all a call pays

    async def answer(self, message: Message) -> Message | None:
        method, params = message.get("method"), message.get("params") or {}
        if method == "tools/list":
            return self._reply(message, {"tools": self.tools, "resultType": "complete", "cacheScope": "private", "ttlMs": 3_600_000})
        if method != "tools/call" or params.get("name") != "mcp_call_tool":
            return await self.child.send(message)
        start = time.perf_counter()
        call = CallArguments.model_validate(params.get("arguments") or {})
        arguments = json.loads(call.arguments_json) if isinstance(call.arguments_json, str) else call.arguments_json
        if self.sdk_child is not None:
            result = await self.sdk_child.call_tool(call.tool_name, arguments)
        else:
            result = await self.child.call_tool(call.tool_name, arguments, params.get("_meta") or {})
        text = "\n".join(block.text for block in result.content if isinstance(block, mt.TextContent))
        data = CallResult(
            server=call.server, tool=call.tool_name, text=text, truncated=False, full_length=len(text),
            structured_content=result.structured_content, other_content=[],
        )  # fmt: skip
        self.audit.put(AuditEntry(
            time=datetime.now(UTC), call_id=uuid.uuid4().hex, tool="mcp_call_tool", server=call.server,
            downstream_tool=call.tool_name, duration_ms=(time.perf_counter() - start) * 1000, outcome="ok",
        ))  # fmt: skip
        content = {"content": [{"type": "text", "text": text}], "structuredContent": data.model_dump(mode="json", exclude_none=True)}
        return self._reply(message, content | {"isError": False, "resultType": "complete"})

    @staticmethod
    def _reply(message: Message, result: Message) -> Message:
        return {"jsonrpc": "2.0", "id": message["id"], "result": result}


async def serve(face: str, sdk: bool, tools: Path, command: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LIMIT)
    sdk_child = Client(StdioServerParameters(command=command[0], args=command[1:])) if sdk else None
    if sdk_child is not None:
        await sdk_child.__aenter__()  # lives as long as the process
    sketch = Sketch(RawChild(process), json.loads(tools.read_text()), sdk_child)
    await (serve_stdio(sketch) if face == "stdio" else serve_http(sketch))


async def serve_stdio(sketch: Sketch) -> None:
    stdin, stdout = await stdio_streams()
    while line := await stdin.readline():
        if (answer := await sketch.answer(json.loads(line))) is not None:
            stdout.write(json.dumps(answer).encode() + b"\n")
            await stdout.drain()


async def serve_http(sketch: Sketch) -> None:
    async def mcp(request: Request) -> Response:
        if request.method != "POST":
            return Response(status_code=405)
        answer = await sketch.answer(json.loads(await request.body()))
        return JSONResponse(answer) if answer is not None else Response(status_code=202)

    sock = bind("127.0.0.1", 0)  # the bridge's own: TCP_NODELAY on every accepted socket
    print("PORT", sock.getsockname()[1], flush=True)
    app = Starlette(routes=[Route("/mcp", mcp, methods=["POST", "GET", "DELETE"])])
    await uvicorn.Server(uvicorn.Config(app, http="httptools", log_level="warning", access_log=False)).serve(sockets=[sock])


def sketch_argv(face: str, sdk: bool, tools: Path) -> list[str]:
    return [sys.executable, __file__, "serve", face, "sdk" if sdk else "raw", str(tools), sys.executable, ECHO]


async def measure(calls: int) -> None:
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="lean-sketch-"))
    (base / "ws").mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"), "MCP_WORKSPACE": str(base / "ws")}
    tools = base / "tools.json"
    rows = []
    async with Client(StdioServerParameters(command=BRIDGE, env={**env, "MCP_STATE_DIR": str(base / "stdio")})) as bridge:
        listed = await bridge.list_tools()
        tools.write_text(json.dumps([tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]))
        await add(bridge, "echo", sys.executable, ECHO)
        async with (
            Client(StdioServerParameters(command=sys.executable, args=[ECHO])) as direct,
            Client(StdioServerParameters(command=sys.executable, args=sketch_argv("stdio", False, tools)[1:])) as lean,
            Client(StdioServerParameters(command=sys.executable, args=sketch_argv("stdio", True, tools)[1:])) as lean_sdk,
        ):
            sides = [echo_call(direct), bridged_echo(bridge), bridged_echo(lean), bridged_echo(lean_sdk)]
            rows.append(("stdio", *await interleaved(sides, calls)))
    async with (
        serving([BRIDGE, "--transport", "http", "--port", "0"], {**env, "MCP_STATE_DIR": str(base / "http")}, r"serving Streamable HTTP at (\S+)", on_stderr=True) as bridge_url,
        serving([sys.executable, ECHO, "--http"], dict(os.environ), r"PORT (\d+)", on_stderr=False) as direct_url,
        serving(sketch_argv("http", False, tools), dict(os.environ), r"PORT (\d+)", on_stderr=False) as lean_url,
        serving(sketch_argv("http", True, tools), dict(os.environ), r"PORT (\d+)", on_stderr=False) as lean_sdk_url,
        Client(streamable_http_client(bridge_url)) as bridge,
        Client(streamable_http_client(direct_url)) as direct,
        Client(streamable_http_client(lean_url)) as lean,
        Client(streamable_http_client(lean_sdk_url)) as lean_sdk,
    ):
        await add(bridge, "echo", sys.executable, ECHO)
        sides = [echo_call(direct), bridged_echo(bridge), bridged_echo(lean), bridged_echo(lean_sdk)]
        rows.append(("Streamable HTTP", *await interleaved(sides, calls)))
    print(f"\nwarm call to the FastMCP echo, medians of {calls} a side in alternating blocks; ratios to direct\n")
    print("| face | direct | bridge | lean | lean, SDK child |\n|---|---|---|---|---|")
    for face, direct_s, bridge_s, lean_s, lean_sdk_s in rows:
        print(f"| {face} | {direct_s * 1000:.2f} ms | {bridge_s / direct_s:.2f}x | {lean_s / direct_s:.2f}x | {lean_sdk_s / direct_s:.2f}x |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        face, child, tools, *command = sys.argv[2:]
        asyncio.run(serve(face, child == "sdk", Path(tools), command))
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--calls", type=int, default=400)
        asyncio.run(measure(parser.parse_args().calls))
