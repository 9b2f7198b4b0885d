"""Runs OUTSIDE the sandbox, before sandbox-exec: set resource limits, then exec the rest (macOS).

    python -I -S rlimit_exec.py FSIZE=1073741824 NOFILE=4096 -- /usr/bin/sandbox-exec -p ... -- cmd

macOS has no prlimit, and a shell's `ulimit` differs in units and letters between sh, bash and
dash; this is the stand-in. Each NAME=value sets RLIMIT_<NAME>, soft and hard, to value in bytes
or counts, but never above the hard limit inherited (an unprivileged process cannot raise it).
The exec keeps the pid, so sandbox-exec and the command inherit the limits. A limit the kernel
refuses ends the launch with the traceback: the child never runs unbounded by mistake.
Standard library only; the bridge runs it with its own interpreter and -I -S.
"""

import os
import resource
import sys


def main(argv: list[str]) -> None:
    cut = argv.index("--")
    for pair in argv[:cut]:
        name, _, value = pair.partition("=")
        which = getattr(resource, f"RLIMIT_{name}")
        hard = resource.getrlimit(which)[1]
        bound = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
        resource.setrlimit(which, (bound, bound))
    os.execv(argv[cut + 1], argv[cut + 1 :])


if __name__ == "__main__":
    main(sys.argv[1:])
