"""Runs INSIDE the sandbox: reach past the seccomp filter through what else runs in the box.

    helpers       for every other process in the box: its seccomp mode, and whether this process
                  can ptrace it or take its descriptors with pidfd_getfd; then the same against a
                  child of its own (the twin: ptrace itself works in the box)
    dgram PATH    socketpair(AF_UNIX, SOCK_DGRAM), then sendto(PATH): a datagram to a host socket
    udp           the allowed twin: a UDP datagram sent to a socket of its own on the box's loopback
    stream_pair   the allowed twin: a socketpair(AF_UNIX, SOCK_STREAM) carries a byte
    flood N HOST PORT
                  open N connections through $HTTPS_PROXY, each asking CONNECT HOST:PORT, hold
                  them all, print how each was answered ({status: count}), then wait for stdin
                  to close

Prints one JSON line. Standard library only.
"""

import ctypes
import json
import os
import socket
import subprocess
import sys

PTRACE_SEIZE = 0x4206  # attach without stopping the tracee; it is let go when this process ends
SYS_PIDFD_OPEN, SYS_PIDFD_GETFD = 434, 438  # the same on x86_64 and aarch64

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]  # variadic in glibc:
libc.syscall.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long]  # ints would pass 32 bits


def _call(result):
    return "ok" if result >= 0 else os.strerror(ctypes.get_errno())


def ptrace(pid):
    return _call(libc.ptrace(PTRACE_SEIZE, pid, None, None))


def getfds(pid):
    """The descriptors 0..31 of `pid` this process could take, or why not."""
    pidfd = libc.syscall(SYS_PIDFD_OPEN, pid, 0, 0)
    if pidfd < 0:
        return os.strerror(ctypes.get_errno())
    taken, errors = [], set()
    for fd in range(32):
        got = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if got >= 0:
            taken.append(fd)
            os.close(got)
        else:
            errors.add(os.strerror(ctypes.get_errno()))
    os.close(pidfd)
    return taken or sorted(errors)


def seccomp_mode(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(line.split()[1] for line in f if line.startswith("Seccomp:"))


def helpers():
    others = {}
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
        try:
            others[pid] = {"seccomp": seccomp_mode(pid), "ptrace": ptrace(pid), "getfd": getfds(pid)}
        except FileNotFoundError:
            continue  # gone meanwhile
    own = subprocess.Popen([sys.executable, "-I", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        twin = {"ptrace": ptrace(own.pid), "getfd": getfds(own.pid)}
    finally:
        own.stdin.close()
        own.wait()
    return {"others": others, "own_child": twin}


def dgram(path):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with a, b:
        a.sendto(b"planted by the child", path)


def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        rx.bind(("127.0.0.1", 0))
        rx.settimeout(5)
        tx.sendto(b"udp inside", rx.getsockname())
        return rx.recv(100).decode()


def stream_pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        a.sendall(b"x")
        return b.recv(1).decode()


def flood(count, host, port):
    proxy = os.environ["HTTPS_PROXY"].rsplit("/", 1)[-1].rsplit(":", 1)
    held, answers = [], {}
    for _ in range(int(count)):
        s = socket.create_connection((proxy[0], int(proxy[1])), timeout=30)
        held.append(s)
        try:  # a refusal may be sent, and the connection closed, before the request is written
            s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\n\r\n".encode())
            head = s.recv(4096).split(b"\r\n", 1)[0].decode() or "closed"
        except (BrokenPipeError, ConnectionResetError):
            head = "closed"
        status = head.split(" ")[1] if " " in head else head
        answers[status] = answers.get(status, 0) + 1
    print(json.dumps({"ok": True, "detail": answers}), flush=True)
    sys.stdin.read()
    for s in held:
        s.close()


def main():
    action, *args = sys.argv[1:]
    if action == "flood":
        return flood(*args)
    try:
        detail = {"helpers": helpers, "dgram": dgram, "udp": udp, "stream_pair": stream_pair}[action](*args)
        print(json.dumps({"ok": True, "detail": detail}))
    except OSError as exc:
        print(json.dumps({"ok": False, "detail": str(exc)}))


main()
