"""Hostile HTTP fixture (stdlib only): endpoints that are not MCP servers and misbehave at the
HTTP level, for the bridge's hostile-HTTP matrix (statuses and HTML are in http_errors.py).

- ``/silent``: reads the request and never sends a status line or headers (holds the connection
  until the client closes it).
- ``/loop``: 307 to ``/loop`` again, for ever (a same-origin redirect loop, any method).
- ``/elsewhere``: 307 to ``https://example.invalid/mcp?session=...`` (another origin: never followed).
- ``/endless-json``: 200 ``application/json``, a body that starts like a JSON-RPC answer and never ends.
- ``/endless-sse``: 200 ``text/event-stream``, one event whose data line never ends.
- ``/gzip-bomb``: 200 ``application/json`` with ``Content-Encoding: gzip`` whatever was asked for:
  about 64 KB on the wire that inflate to 64 MiB of zeros.
- ``/reflect``: 200 ``application/json``, a JSON-RPC error whose message quotes every request
  header back (as careless servers do with "invalid token ..."), under the request's id.
- ``/reflect-piece``: the same, quoting only a 10-character piece from the middle of each header value.
- ``/not-jsonrpc``: 200 ``application/json``, JSON that is no JSON-RPC message, holding ``PLANTED``
  as a value and as a key (what a validator quoting its input would leak).
Binds 127.0.0.1 on a free port and prints ``PORT <n>`` on stdout before serving. ``--http`` and
other arguments are accepted and ignored (so it starts like the FastMCP fixtures).
"""

import functools
import json
import sys
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = b"x" * 65536
PLANTED = "planted-downstream-value-5e1f"
BOMB_MIB = 64


@functools.cache
def bomb() -> bytes:
    gzip = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
    zeros = bytes(1024 * 1024)
    return b"".join(gzip.compress(zeros) for _ in range(BOMB_MIB)) + gzip.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        try:
            if path == "/silent":
                while self.rfile.read1(65536):  # until the client hangs up
                    pass
            elif path == "/loop":
                self.redirect("/loop")
            elif path == "/elsewhere":
                self.redirect("https://example.invalid/mcp?session=from-the-query")
            elif path == "/endless-json":
                self.endless("application/json", b'{"jsonrpc": "2.0", "id": 1, "result": {"pad": "')
            elif path == "/endless-sse":
                self.endless("text/event-stream", b"event: message\ndata: ")
            elif path == "/gzip-bomb":
                self.gzip_bomb()
            elif path == "/reflect":
                self.reflect(body)
            elif path == "/reflect-piece":
                self.reflect(body, piece=True)
            elif path == "/not-jsonrpc":
                self.json({"status": "ok", "data": PLANTED, PLANTED: {"nested": [PLANTED]}})
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up: that is the point

    def redirect(self, location: str) -> None:
        self.send_response(307)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def endless(self, content_type: str, head: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")  # no length: the body lasts until the connection closes
        self.end_headers()
        self.wfile.write(head)
        while True:
            self.wfile.write(CHUNK)

    def gzip_bomb(self) -> None:
        body = bomb()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def reflect(self, body: bytes, piece: bool = False) -> None:
        try:
            request_id = json.loads(body).get("id")
        except (ValueError, AttributeError):
            request_id = None
        quoted = "; ".join(
            f"{name}: {value[len(value) // 2 - 5 : len(value) // 2 + 5] if piece else value}"
            for name, value in self.headers.items()
        )
        error = {"code": -32001, "message": f"invalid credentials, you sent {quoted}"}
        self.json({"jsonrpc": "2.0", "id": request_id, "error": error})

    def json(self, document: object) -> None:
        payload = json.dumps(document).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any

    def log_message(self, format: str, *args) -> None:  # quiet: no access log on stderr
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)
