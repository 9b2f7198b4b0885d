"""Resource limits for one child: memory, processes, file size and open files.

Applied inside the sandbox by `prlimit` (util-linux) just before the command, so bwrap itself is
not limited; the limits pass down to everything the command starts. The process limit counts the
processes of the child's user in its own user namespace, i.e. this sandbox only.
"""

from __future__ import annotations

from dataclasses import dataclass

PRLIMIT = "/usr/bin/prlimit"
GIB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Per-child bounds; `None` leaves one unlimited (as inherited)."""

    memory_bytes: int | None = 2 * GIB  # address space: node and python start in well under 1 GiB
    processes: int | None = 512
    file_bytes: int | None = 1 * GIB
    open_files: int | None = 4096

    def prlimit_args(self) -> list[str]:
        """`prlimit --as=... --nproc=... --fsize=... --nofile=... --`, or [] when all are off."""
        pairs = (
            ("--as", self.memory_bytes),
            ("--nproc", self.processes),
            ("--fsize", self.file_bytes),
            ("--nofile", self.open_files),
        )
        flags = [f"{flag}={value}" for flag, value in pairs if value is not None]
        return [PRLIMIT, *flags, "--"] if flags else []
