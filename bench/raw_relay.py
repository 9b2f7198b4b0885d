"""A relay that understands nothing of MCP: the least a process between a host and a server adds.

Run: python bench/raw_relay.py stdio|http COMMAND [ARG ...]

`stdio` copies its stdin to COMMAND's stdin and COMMAND's stdout to its stdout, line by line.
`http` serves POST bodies on 127.0.0.1 (it prints `PORT <n>` first): each body goes to COMMAND's
stdin as one line, and the answer line with the same id comes back as `application/json`; a body
without an id (a notification) gets 202, any other method 405, which the spec lets a server say to
the SSE stream it does not offer. No JSON-RPC model, no validation, one request at a time.

`bench_bridge.py` puts it where the bridge sits, so a bridged row can be read against what any
relay, however lean, costs on the same machine in the same blocks.
"""

from __future__ import annotations

import asyncio
import json
import sys

LIMIT = 1 << 24


async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while line := await source.readline():
        sink.write(line)
        await sink.drain()


async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """This process's stdin and stdout as asyncio streams."""
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader(limit=LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout.buffer)
    return stdin, asyncio.StreamWriter(transport, protocol, None, loop)


async def relay_stdio(command: list[str]) -> None:
    child = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LIMIT)
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = await stdio_streams()
    await asyncio.gather(pump(stdin, child.stdin), pump(child.stdout, stdout))


async def relay_http(command: list[str]) -> None:
    child = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LIMIT)
    assert child.stdin is not None and child.stdout is not None
    one_at_a_time = asyncio.Lock()

    async def answer(body: bytes) -> bytes:
        message = json.loads(body)
        async with one_at_a_time:
            child.stdin.write(body.replace(b"\n", b"") + b"\n")
            await child.stdin.drain()
            if "id" not in message:
                return b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n"
            while True:
                line = await child.stdout.readline()
                if not line:
                    raise ConnectionError("the server's stdout ended")
                reply = json.loads(line)
                if reply.get("id") == message["id"] and "method" not in reply:
                    break
        return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(line), line)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line, *headers = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                fields = dict(header.lower().split(":", 1) for header in headers if ":" in header)
                body = await reader.readexactly(int(fields.get("content-length", "0")))
                if request_line.startswith("POST "):
                    writer.write(await answer(body))
                else:
                    writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed its connection
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print("PORT", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    mode, *command = sys.argv[1:]
    asyncio.run(relay_stdio(command) if mode == "stdio" else relay_http(command))
