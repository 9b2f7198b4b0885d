"""Runs inside the sandbox: attempt one action, print one JSON line {"ok": bool, "detail": ...}.

    write PATH | write_tmp NAME (in $TMPDIR) | read PATH | listdir PATH | rename SRC DST
    connect HOST PORT | connect_unix PATH | socketpair | proxy_connect HOST PORT (via $HTTPS_PROXY)
    environ (every readable /proc/*/environ) | own_environ | heartbeat PATH (append forever)

Also run by scripts/macos_sandbox_smoke.py, so it sticks to the standard library.
"""

import json
import os
import socket
import sys
import tempfile
import time


def write(path):
    with open(path, "w") as f:
        f.write("written from the sandbox\n")


def write_tmp(name):
    path = os.path.join(tempfile.gettempdir(), name)
    write(path)
    return path


def read(path):
    with open(path) as f:
        return f.read()


def connect(host, port):
    socket.create_connection((host, int(port)), timeout=3).close()


def connect_unix(path):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(3)
        s.connect(path)


def proxy_connect(host, port):
    """CONNECT through $HTTPS_PROXY; on 200, send a line and return the tunnel's answer."""
    proxy = os.environ["HTTPS_PROXY"].rsplit("/", 1)[-1]
    proxy_host, proxy_port = proxy.rsplit(":", 1)
    with socket.create_connection((proxy_host, int(proxy_port)), timeout=5) as s:
        s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
        status = head.split(b"\r\n", 1)[0].decode()
        if " 200 " not in status + " ":
            raise ConnectionRefusedError(head.decode(errors="replace"))
        s.sendall(b"ping\n")
        return status + " | " + s.recv(100).decode()


def environ():
    found = {}
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                found[pid] = f.read().decode(errors="replace")
        except OSError as exc:
            found[pid] = f"unreadable: {exc}"
    return found


def heartbeat(path):
    while True:
        with open(path, "a") as f:
            f.write(".")
        time.sleep(0.02)


ACTIONS = {
    "write": write,
    "write_tmp": write_tmp,
    "read": read,
    "listdir": os.listdir,
    "rename": os.rename,
    "connect": connect,
    "connect_unix": connect_unix,
    "proxy_connect": proxy_connect,
    "socketpair": lambda: [s.close() for s in socket.socketpair()] and None,
    "environ": environ,
    "own_environ": lambda: dict(os.environ),
    "heartbeat": heartbeat,
}

action, *args = sys.argv[1:]
try:
    result = {"ok": True, "detail": ACTIONS[action](*args)}
except OSError as exc:
    result = {"ok": False, "detail": f"{type(exc).__name__}: {exc}"}
print(json.dumps(result))
