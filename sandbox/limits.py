"""Resource limits for one child: memory, processes, file size and open files.

On Linux set with prlimit(2) on bwrap's sandbox process while `gate.py` holds it, before it forks
the command; the limits pass down to everything the command starts. The process limit counts the
processes of the child's user in its own user namespace, i.e. this sandbox only (but a root bridge's
children are host uid 0, which the kernel exempts: there a pids cgroup bounds them).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

GIB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Per-child bounds; `None` leaves one unlimited (as inherited)."""

    memory_bytes: int | None = 2 * GIB  # address space: node and python start in well under 1 GiB
    processes: int | None = 512
    file_bytes: int | None = 1 * GIB
    open_files: int | None = 4096

    def rlimits(self) -> list[tuple[int, int]]:
        """(resource.RLIMIT_*, value) for each bound that is on."""
        pairs = (
            (resource.RLIMIT_AS, self.memory_bytes),
            (resource.RLIMIT_NPROC, self.processes),
            (resource.RLIMIT_FSIZE, self.file_bytes),
            (resource.RLIMIT_NOFILE, self.open_files),
        )
        return [(kind, value) for kind, value in pairs if value is not None]
