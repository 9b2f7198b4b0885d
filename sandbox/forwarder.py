"""Runs INSIDE the sandbox as its pid 1: relay 127.0.0.1:PORT to the bridge's proxy socket.

    python3 -I -S forwarder.py SOCKET PORT SECCOMP_FD|- -- COMMAND...

The sandbox has its own network namespace with nothing but loopback, so the child's HTTP(S)_PROXY
points here, and each connection is relayed over the Unix socket the launch bound in from the
bridge's filtering proxy. The forwarder needs AF_UNIX for that, so it runs without the seccomp
filter and installs it (read from SECCOMP_FD) on the command alone, in the forked child before
exec. An unfiltered process the command could ptrace would be a way around the filter (ptrace it,
make it open a Unix socket, take the descriptor with `pidfd_getfd`), so:

- bwrap starts this as the box's pid 1 (`--as-pid-1`): there is no other unfiltered process;
- it makes itself non-dumpable before anything else, so the command (same uid, no capabilities)
  can neither ptrace it, nor take its descriptors, nor read its /proc files;
- as pid 1 it takes no signal it does not handle, even SIGKILL, from inside the box.

It listens before the command starts (no race), relays at most MAX_RELAYS connections at once
(one more is answered 503 and closed, an accept error ends that connection only), reaps every
orphan the command leaves (it is their init), and exits as the command did: a command killed by a
signal exits 128 + the signal's number, as bwrap reports it.

Standard library only, and no package imports: it runs from a read-only bind of this one file.
"""

import ctypes
import errno
import os
import signal
import socket
import subprocess
import sys
import threading
import time

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CHUNK = 65536
MAX_RELAYS = 64  # the proxy's own per-child bound; each relay holds two descriptors and two threads
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
RESOURCE_ERRORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
SHED_WAIT_S = 0.1
THREAD_STACK = 256 * 1024  # a pump needs little; 8 MiB each would weigh on the memory limit

libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]  # variadic


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


def relay(client, socket_path, slots):
    try:
        with client, socket.socket(socket.AF_UNIX) as upstream:
            try:
                upstream.connect(socket_path)
            except OSError:
                return
            back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
            back.start()
            pump(client, upstream)
            back.join()
    finally:
        slots.release()


def serve(listener, socket_path):
    """Accept forever; a connection past the bound or one that cannot be served ends alone."""
    slots = threading.BoundedSemaphore(MAX_RELAYS)
    spare = os.open(os.devnull, os.O_RDONLY)
    while True:
        try:
            client, _ = listener.accept()
        except OSError as exc:
            if exc.errno in RESOURCE_ERRORS:
                spare = shed(listener, spare)
            continue  # ECONNABORTED and the like: that connection is gone already
        if not slots.acquire(blocking=False):
            try:
                client.sendall(BUSY)
            except OSError:
                pass  # the child hung up first
            client.close()
            continue
        try:
            threading.Thread(target=relay, args=(client, socket_path, slots), daemon=True).start()
        except RuntimeError:  # no thread left under the process limit: this connection ends
            client.close()
            slots.release()


def shed(listener, spare):
    """Out of descriptors: give up the spare one to accept the waiting connection and end it
    (else it would fail every accept); the new spare, or None (then wait a little instead)."""
    if spare is None:
        time.sleep(SHED_WAIT_S)
    else:
        os.close(spare)
    try:
        listener.accept()[0].close()
    except OSError:
        pass  # still none: the next accept tries again
    try:
        return os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return None


def reap(pid):
    """Wait for `pid`, reaping every orphan meanwhile (pid 1 is their parent); its exit status."""
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1
        if done == pid:
            return os.waitstatus_to_exitcode(status)


def main():
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:  # first: nothing in the box may ptrace this process
        sys.exit("forwarder: cannot make itself non-dumpable")
    threading.stack_size(THREAD_STACK)
    socket_path, port, fd_arg, sep, *command = sys.argv[1:]
    if sep != "--" or not command:
        sys.exit("usage: forwarder.py SOCKET PORT SECCOMP_FD|- -- COMMAND...")
    program = read_program(fd_arg)
    listener = socket.create_server(("127.0.0.1", int(port)), backlog=MAX_RELAYS)
    child = subprocess.Popen(command, preexec_fn=seccomp_installer(program))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: os.kill(child.pid, number))
    threading.Thread(target=serve, args=(listener, socket_path), daemon=True).start()
    code = reap(child.pid)
    os._exit(128 - code if code < 0 else code & 0xFF)  # pid 1 cannot kill itself with the signal


main()
