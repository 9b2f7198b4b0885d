"""Runs INSIDE the sandbox, before the server: relay 127.0.0.1:PORT to the bridge's proxy socket.

    python3 -I -S forwarder.py SOCKET PORT SECCOMP_FD|- -- COMMAND...

The sandbox has its own network namespace with nothing but loopback, so the child's HTTP(S)_PROXY
points here, and each connection is relayed over the Unix socket the launch bound in from the
bridge's filtering proxy. The forwarder needs AF_UNIX for that, so it is started unfiltered and
installs the seccomp filter (read from SECCOMP_FD) on the command alone, in the forked child
before exec. It listens before the command starts (no race), then waits for it and exits as it did.

Standard library only, and no package imports: it runs from a read-only bind of this one file.
"""

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CHUNK = 65536


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def read_program(fd_arg):
    if fd_arg == "-":
        return None
    fd, chunks = int(fd_arg), []
    while chunk := os.read(fd, CHUNK):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def seccomp_installer(program):
    """A preexec function applying `program`; everything it touches is built before the fork."""
    if program is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))

    def install():
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            os._exit(126)
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
            os._exit(126)

    install.keep = (buffer, fprog)  # alive until the fork
    return install


def pump(source, sink):
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        pass  # either side went away: the relay is over
    finally:
        for s in (sink, source):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by the other pump


def relay(client, socket_path):
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
    pump(client, upstream)


def serve(listener, socket_path):
    while True:
        client, _ = listener.accept()
        threading.Thread(target=relay, args=(client, socket_path), daemon=True).start()


def main():
    socket_path, port, fd_arg, sep, *command = sys.argv[1:]
    if sep != "--" or not command:
        sys.exit("usage: forwarder.py SOCKET PORT SECCOMP_FD|- -- COMMAND...")
    program = read_program(fd_arg)
    listener = socket.create_server(("127.0.0.1", int(port)), backlog=64)
    child = subprocess.Popen(command, preexec_fn=seccomp_installer(program))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: child.send_signal(number))
    threading.Thread(target=serve, args=(listener, socket_path), daemon=True).start()
    code = child.wait()
    if code < 0:  # die the same way, so the bridge sees the signal (a limit, a kill)
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


main()
