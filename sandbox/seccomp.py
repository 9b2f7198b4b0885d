"""A classic-BPF seccomp program, built once, that a sandboxed command runs under.

It refuses (EPERM) creating `AF_UNIX` sockets, so a child cannot `connect()` to a daemon's socket
that happens to be visible (bind mounts never stop `connect()`), and every `io_uring_*` call,
whose operations bypass seccomp. `socketpair()` is a separate syscall and stays allowed for stream
and seqpacket pairs (python's subprocess and node's child_process need them; a connected stream
socket cannot be pointed elsewhere), but not for `AF_UNIX` datagram pairs: an unconnected datagram
socket can `sendto()` any path, and classic BPF cannot read the path to judge it. A foreign
architecture (32-bit calls from a 64-bit process, x32) is killed outright, since its syscall
numbers mean other things.

No libseccomp: the program is twenty instructions, rendered here for x86_64 and aarch64 and
passed to bwrap with `--seccomp FD` (or applied by `sandbox/forwarder.py` with `prctl`).
"""

from __future__ import annotations

import functools
import platform
import struct

AF_UNIX = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK / SOCK_CLOEXEC
EPERM = 1

# <linux/audit.h> and the per-architecture syscall tables
ARCHES = {
    "x86_64": {"audit": 0xC000003E, "socket": 41, "socketpair": 53, "io_uring": (425, 426, 427), "x32_bit": 0x40000000},
    "aarch64": {"audit": 0xC00000B7, "socket": 198, "socketpair": 199, "io_uring": (425, 426, 427), "x32_bit": None},
}
ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}

# <linux/filter.h>, <linux/seccomp.h>
LD_W_ABS = 0x20
JEQ_K = 0x15
JGE_K = 0x35
AND_K = 0x54
RET_K = 0x06
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0, OFFSET_ARG1 = 0, 4, 16, 24  # struct seccomp_data, little-endian low word


class UnsupportedArchitecture(RuntimeError):
    """No filter for this machine; the sandbox refuses to start rather than run unfiltered."""


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


@functools.cache
def filter_program(machine: str | None = None) -> bytes:
    """The program as raw `struct sock_filter` entries, for `--seccomp FD` or `prctl`."""
    name = machine or platform.machine()
    arch = ARCHES.get(ARCH_ALIASES.get(name, name))
    if arch is None:
        raise UnsupportedArchitecture(f"no seccomp filter for {name}; supported: {', '.join(ARCHES)}")
    deny = RET_ERRNO | EPERM
    prog = [
        _insn(LD_W_ABS, OFFSET_ARCH),
        _insn(JEQ_K, arch["audit"], jt=1),  # skip the kill when the arch matches
        _insn(RET_K, RET_KILL_PROCESS),
        _insn(LD_W_ABS, OFFSET_NR),
    ]
    if arch["x32_bit"] is not None:
        prog += [_insn(JGE_K, arch["x32_bit"], jf=1), _insn(RET_K, RET_KILL_PROCESS)]
    first, *_, last = arch["io_uring"]
    prog += [
        _insn(JGE_K, first, jf=2),  # io_uring_setup .. io_uring_register are consecutive
        _insn(JGE_K, last + 1, jt=1),
        _insn(RET_K, deny),
        _insn(JEQ_K, arch["socket"], jf=2),  # -> socketpair
        _insn(LD_W_ABS, OFFSET_ARG0),  # socket(AF_UNIX, ...): refused
        _insn(JEQ_K, AF_UNIX, jt=6, jf=7),  # -> deny, allow
        _insn(JEQ_K, arch["socketpair"], jf=6),  # -> allow
        _insn(LD_W_ABS, OFFSET_ARG0),  # socketpair(AF_UNIX, SOCK_DGRAM, ...): refused
        _insn(JEQ_K, AF_UNIX, jf=4),  # -> allow
        _insn(LD_W_ABS, OFFSET_ARG1),
        _insn(AND_K, SOCK_TYPE_MASK),
        _insn(JEQ_K, SOCK_DGRAM, jf=1),  # -> allow
        _insn(RET_K, deny),
        _insn(RET_K, RET_ALLOW),
    ]
    return b"".join(prog)
