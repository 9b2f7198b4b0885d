"""Relay fixture: a FastMCP server that sends back everything a server can send besides text.

Tools, one per thing the bridge must relay:
- progress(steps): `steps` progress notifications, then "done"; flood(n): n progress and n logs;
- chatter(n): n info logs, then "done";
- ask(question): a form elicitation (server-initiated, handshake era); ask_url(): a URL one;
- guard(question): the same question as a 2026-07-28 input_required round (multi round-trip);
- sample(prompt): a sampling request; roots(): the client's roots, one URI a line (a request of
  the server's own, handshake era); roots_round(): the same as a 2026-07-28 input_required round;
- abilities(): the client capabilities this session was opened with, as JSON;
- picture(size): a PNG of `size` bytes; sound(): a WAV block; document(): an embedded text
  resource; link(): a link to the listed resource `relay://notes/long`; long(n): n characters of
  numbered lines, different all the way through;
- sleeper(): reports progress 0, then waits until cancelled; cancelled(): returns once it was; instance(): which process answers.

`--modern-only` refuses the initialize handshake (a server of the 2026-07-28 era only).
Run: ``python relay.py [--modern-only]`` (stdio) or with ``--http`` (prints ``PORT <n>``).
"""

import asyncio
import json
import logging
import os
import struct
import sys
import uuid
import warnings
import zlib

import mcp_types as mt
from fastmcp import Context, FastMCP
from fastmcp.server.middleware import Middleware
from fastmcp.utilities.types import Audio, Image
from mcp.shared.exceptions import MCPDeprecationWarning

logging.getLogger("fastmcp").setLevel(logging.WARNING)

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)  # sampling, roots: the handshake era's own

mcp = FastMCP("relay-fixture")
was_cancelled = asyncio.Event()
INSTANCE = uuid.uuid4().hex


def png(size: int) -> bytes:
    """A valid 1x1 PNG padded with an ancillary chunk to exactly `size` bytes (at least 67)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0))
    body = chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00\x00")) + chunk(b"IEND", b"")
    pad = max(0, size - len(head) - len(body) - 12)
    return head + chunk(b"tEXt", bytes(i % 251 for i in range(pad))) + body


def long_text(n: int) -> str:
    lines, total = [], 0
    number = 0
    while total < n:
        number += 1
        line = f"line {number:06d}: the quick brown fox {number * 7919 % 100003}\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:n]


@mcp.tool
async def progress(steps: int, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return "done"


@mcp.tool
async def flood(n: int, ctx: Context) -> str:
    for step in range(1, n + 1):
        await ctx.report_progress(step, n)
        await ctx.info(f"flood {step}")
    return "flooded"


@mcp.tool
async def chatter(n: int, ctx: Context) -> str:
    for line in range(1, n + 1):
        await ctx.info(f"chatter {line}")
    return "done"


@mcp.tool
async def ask(question: str, ctx: Context) -> str:
    answer = await ctx.elicit(question, response_type=str)
    if answer.action == "accept":
        return f"accepted: {answer.data}"
    return answer.action


@mcp.tool
async def ask_url(ctx: Context) -> str:
    answer = await ctx.session.elicit_url(
        "Sign in at the page", "https://example.test/sign-in", "sign-in-1", related_request_id=ctx.request_id
    )
    return answer.action


@mcp.tool
async def guard(question: str, ctx: Context) -> str | mt.InputRequiredResult:
    answers = ctx.input_responses
    if not answers:
        schema = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
        params = mt.ElicitRequestFormParams(message=question, requested_schema=schema)
        return mt.InputRequiredResult(input_requests={"q": mt.ElicitRequest(params=params)}, request_state="asked")
    answer = answers["q"]
    assert isinstance(answer, mt.ElicitResult)
    if answer.action == "accept" and answer.content:
        return f"accepted: {answer.content['value']} (state {ctx.request_state})"
    return answer.action


@mcp.tool
async def sample(prompt: str, ctx: Context) -> str:
    message = mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=prompt))
    result = await ctx.session.create_message([message], max_tokens=50, related_request_id=ctx.request_id)
    content = result.content
    return f"sampled: {content.text}" if isinstance(content, mt.TextContent) else "sampled: (not text)"


@mcp.tool
async def roots(ctx: Context) -> str:
    listed = await ctx.session.list_roots()
    return "\n".join(str(root.uri) for root in listed.roots)


@mcp.tool
async def roots_round(ctx: Context) -> str | mt.InputRequiredResult:
    """The client's roots asked as a 2026-07-28 server asks: an input_required round."""
    answers = ctx.input_responses
    if not answers:
        return mt.InputRequiredResult(input_requests={"roots": mt.ListRootsRequest()}, request_state="roots")
    listed = answers["roots"]
    assert isinstance(listed, mt.ListRootsResult)
    return "\n".join(str(root.uri) for root in listed.roots)


@mcp.tool
async def abilities(ctx: Context) -> str:
    capabilities = ctx.session.client_capabilities or mt.ClientCapabilities()
    return json.dumps(capabilities.model_dump(by_alias=True, mode="json", exclude_none=True), sort_keys=True)


@mcp.tool
def picture(size: int) -> Image:
    return Image(data=png(size), format="png")


@mcp.tool
def sound() -> Audio:
    return Audio(data=b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + bytes(range(24)), format="wav")


@mcp.tool
def document() -> mt.EmbeddedResource:
    text = mt.TextResourceContents(uri="relay://notes/inline", mime_type="text/plain", text="inline note body")
    return mt.EmbeddedResource(type="resource", resource=text)


@mcp.tool
def link() -> list[mt.ContentBlock]:
    return [
        mt.TextContent(type="text", text="see the link"),
        mt.ResourceLink(type="resource_link", uri="relay://notes/long", name="long notes", mime_type="text/plain"),
    ]


@mcp.resource("relay://notes/long", mime_type="text/plain")
def notes() -> str:
    return long_text(9000)


@mcp.tool
def long(n: int) -> str:
    return long_text(n)


@mcp.tool
async def sleeper(ctx: Context) -> str:
    await ctx.report_progress(0, 1, "asleep")
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        was_cancelled.set()
        raise
    return "woke"


@mcp.tool
async def cancelled() -> bool:
    """Waits until sleeper was cancelled: a call that never comes back means it never was."""
    await was_cancelled.wait()
    return True


@mcp.tool
def instance() -> str:
    """Which process this is (pids repeat: each sandboxed child has its own pid namespace)."""
    return INSTANCE


class RefuseHandshake(Middleware):
    """A server of the 2026-07-28 era only: the initialize handshake is refused."""

    async def on_initialize(self, context, call_next):  # type: ignore[no-untyped-def]
        raise ValueError("this server speaks 2026-07-28 only")

if __name__ == "__main__":
    if "--modern-only" in sys.argv[1:]:
        mcp.add_middleware(RefuseHandshake())
    if "--http" in sys.argv[1:]:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from echo import serve_http

        serve_http(mcp)
    else:
        mcp.run(show_banner=False)
