"""HTTP error fixture (stdlib only): an HTTP server that is *not* an MCP server, for testing how
the bridge reports HTTP failures.

- ``/status/401``, ``/status/403``, ``/status/404``, ``/status/500``: that status, any method
  (401 also carries ``WWW-Authenticate: Bearer realm="fixture"``).
- ``/html``: 200 with a text/html page, any method.
- anything else: 404.
Binds 127.0.0.1 on a free port and prints ``PORT <n>`` on stdout before serving. ``--http`` and
other arguments are accepted and ignored (so it starts like the FastMCP fixtures).
"""

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATUSES = {401, 403, 404, 500}
HTML = b"<!doctype html><html><head><title>Not MCP</title></head><body><h1>Hello</h1></body></html>"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # consume the body so the connection stays sane
        path = self.path.split("?", 1)[0]
        if path == "/html":
            self.reply(200, HTML, "text/html; charset=utf-8")
            return
        prefix = "/status/"
        if path.startswith(prefix) and path[len(prefix):].isdigit() and int(path[len(prefix):]) in STATUSES:
            status = int(path[len(prefix):])
        else:
            status = 404
        self.reply(status, f"fixture status {status}\n".encode(), "text/plain; charset=utf-8")

    def reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="fixture"')
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

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
