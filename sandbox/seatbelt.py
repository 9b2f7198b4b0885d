"""macOS: render a `Policy` into an SBPL profile plus `-D` parameters for `sandbox-exec`. Pure.

No path ever enters the profile text: each one reaches it as `-DKEY=value` and is read back with
`(param "KEY")`; regexes are assembled inside SBPL with `regex-quote`. The text therefore depends
only on the policy's *shape* (counts and the network flag), which makes injection through a path
structurally impossible and lets tests compare the text for benign and hostile paths.

Rule order matters: SBPL lets a later matching rule override an earlier one, so the broad read
allow comes first, then the hidden trees (the real home, the other servers' homes), the exposed
trees and writable roots shown again, the write allows, the guarded-path denies (git dirs anywhere
under a writable root and the config names at its top, whether they exist or not: regexes need no
placeholder), the pins and the secret denies.

A `proxy` network lets the child connect to one address only: the filtering proxy's loopback port
for its list (`proxy.loopback_route`), as `(remote ip (param "PROXY"))` with PROXY set to
`localhost:<port>` (Seatbelt accepts only `localhost` or `*` as the host there). No DNS is
allowed: a client given HTTPS_PROXY sends the name in its CONNECT and the proxy resolves it.

Limits: `limits_prelude` puts `limits_guard.py` in front of sandbox-exec. File size and open files
are rlimits per process, as on Linux. Memory and processes are not: by reading XNU's source (not by
a run), it checks RLIMIT_AS and RLIMIT_DATA against the whole address space, which for a macOS
process starts far above a useful bound (the shared cache and reserved ranges), and RLIMIT_NPROC
counts every process of the user on the machine. So the guard sets RLIMIT_NPROC to what the user
runs at spawn plus the bound (a fork bomb stops in the kernel), and stays beside the child to
kill its tree once its resident memory or process count passes the bound (a poll: it stops a
runaway, not a child that detaches on purpose). Unverified here (no Mac in CI): run
`scripts/macos_sandbox_smoke.py` on a Mac (its INFO lines report what the kernel does).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sandbox.limits import Limits
from sandbox.policy import Policy

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
LIMITS_GUARD = Path(__file__).with_name("limits_guard.py")

BASE = """\
(version 1)
(deny default)

; processes: children inherit this profile
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))

; what interpreters read while starting: sysctls, host info, prefs, user lookups
(allow sysctl-read)
(allow mach-host*)
(allow user-preference-read)
(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))
(allow ipc-posix-sem)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/ptmx"))

; reads: everywhere, minus the secret denies below
(allow file-read*)
(allow file-write-data (require-all (literal "/dev/null") (vnode-type CHARACTER-DEVICE)))
"""

PROTECTED_REGEXES = (
    r'#"/(.*/)?\.git(/|$)"',  # every git dir below a writable root, existing or not
    r'#"/(\.vscode|\.idea|\.claude|\.cursor|\.husky|\.cargo|tool_mcp)(/|$)"',
    r'#"/(\.envrc|\.mcp\.json|\.env|\.npmrc|\.yarnrc|\.yarnrc\.ya?ml|\.gitattributes|\.gitmodules)$"',
)

NETWORK = """
; network: outbound IP and the DNS resolver only; nothing inbound, no other Unix sockets
(allow network-outbound (remote ip "*:*"))
(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))
(allow mach-lookup
  (global-name "com.apple.SystemConfiguration.configd")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.ocspd"))
"""


PROXY_NETWORK = """
; network: the bridge's filtering proxy on its loopback port and nothing else (no DNS: the proxy
; resolves the names it allows; no other port, no Unix socket)
(allow network-outbound (remote ip (param "PROXY")))
"""


def _group(keys: list[str], matcher: str) -> str:
    return "".join(f'\n  ({matcher} (param "{key}"))' for key in keys)


def profile_and_params(
    policy: Policy, *, tmpdir: Path, proxy_port: int | None = None
) -> tuple[str, dict[str, str]]:
    """The profile text (shape only) and the parameters that carry every path and the proxy's port.

    `proxy_port` is required for a `proxy` network (raises ValueError without a valid one).
    """
    params = {"WORKSPACE": str(policy.workspace), "TMPDIR": str(tmpdir)}
    if policy.network == "proxy":
        params["PROXY"] = f"localhost:{_port(proxy_port)}"
    if policy.home is not None:
        params["HOME"] = str(policy.home)
    params |= {f"WRITE_{i}": str(p) for i, p in enumerate(policy.write_roots)}
    params |= {f"HIDE_{i}": str(p) for i, p in enumerate(policy.hidden)}
    params |= {f"EXPOSE_{i}": str(p) for i, p in enumerate(policy.exposed)}
    params |= {f"PIN_{i}": str(p) for i, p in enumerate(policy.pinned)}
    params |= {f"DENY_{i}": str(m.path) for i, m in enumerate(policy.masks)}
    params |= {f"OWN_{i}": str(p) for i, p in enumerate(policy.own)}
    guarded = ["WORKSPACE", *(k for k in params if k.startswith("WRITE_"))]
    writable = [*guarded[:1], "TMPDIR", *(["HOME"] if policy.home else []), *guarded[1:]]
    keys = {prefix: [k for k in params if k.startswith(prefix)] for prefix in ("HIDE_", "EXPOSE_", "PIN_", "DENY_", "OWN_")}

    text = BASE
    # A rule with no filter would match everything, so empty groups are left out entirely.
    if keys["HIDE_"]:
        text += "\n; the real home and the other servers' homes: not visible\n"
        text += f"(deny file-read*{_group(keys['HIDE_'], 'subpath')})\n"
        text += "\n; shown again read-only: the command's install trees, tool folders, read paths\n"
        text += f"(allow file-read*{_group([*keys['EXPOSE_'], *writable], 'subpath')})\n"
    text += "\n; writes: the workspace, the private temp dir and home, capability roots\n"
    text += f"(allow file-write*{_group(writable, 'subpath')})\n"
    text += "\n; guarded in every writable root but the home: the host runs these later\n(deny file-write*"
    for key in guarded:
        for pattern in PROTECTED_REGEXES:
            text += f'\n  (regex (string-append "^" (regex-quote (param "{key}")) {pattern}))'
    text += ")\n"
    if keys["OWN_"]:
        text += "\n; the bridge's own code and venv inside a writable root: the next start runs them\n"
        text += f"(deny file-write*{_group(keys['OWN_'], 'subpath')})\n"
    if keys["PIN_"]:
        text += "\n; parents of protected and secret paths: renaming one would carry a deny away\n"
        text += f"(deny file-write-unlink{_group(keys['PIN_'], 'literal')})\n"
    if keys["DENY_"]:
        text += "\n; secrets: neither read nor write\n"
        text += f"(deny file-read* file-write*{_group(keys['DENY_'], 'subpath')})\n"
    if policy.network == "allow":
        text += NETWORK
    elif policy.network == "proxy":
        text += PROXY_NETWORK
    return text, params


def sandbox_exec_argv(
    policy: Policy,
    argv: Sequence[str],
    *,
    tmpdir: Path,
    proxy_port: int | None = None,
    limits: Limits | None = None,
    python: str = "",
) -> list[str]:
    """`[limits prelude] sandbox-exec -p PROFILE -DKEY=value ... -- argv`, one parameter an element.

    `python` runs the prelude (see `limits_prelude`); it is needed only when `limits` bound something.
    """
    profile, params = profile_and_params(policy, tmpdir=tmpdir, proxy_port=proxy_port)
    prelude = limits_prelude(limits, python) if limits is not None else []
    return [*prelude, SANDBOX_EXEC, "-p", profile, *(f"-D{k}={v}" for k, v in params.items()), "--", *argv]


def limits_prelude(limits: Limits, python: str) -> list[str]:
    """`python -I -S limits_guard.py FSIZE=.. NOFILE=.. NPROC_MORE=.. WATCH_MEMORY=.. WATCH_PROCESSES=.. --`,
    or [] when nothing is bounded."""
    pairs = (
        ("FSIZE", limits.file_bytes), ("NOFILE", limits.open_files), ("NPROC_MORE", limits.processes),
        ("WATCH_MEMORY", limits.memory_bytes), ("WATCH_PROCESSES", limits.processes),
    )  # fmt: skip
    flags = [f"{name}={value}" for name, value in pairs if value is not None]
    if flags and not python:
        raise ValueError("the limits prelude needs an interpreter to run limits_guard.py")
    return [python, "-I", "-S", str(LIMITS_GUARD), *flags, "--"] if flags else []


def _port(port: int | None) -> int:
    """A TCP port number, or ValueError: it reaches the profile as `localhost:<port>`."""
    if type(port) is not int or not 0 < port < 65536:
        raise ValueError(f"a proxy network needs the proxy's loopback port, not {port!r}")
    return port
