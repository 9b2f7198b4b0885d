"""The scrubbed child environment: built from empty, never a copy of the bridge's environment.

The bridge's environment holds its own credentials; the sandbox tool (bwrap, sandbox-exec) is
launched with this environment too, because bwrap's PID 1 keeps its launch env readable at
`/proc/1/environ` inside the sandbox. The MCP SDK merges HOME LOGNAME PATH SHELL TERM USER from
the bridge underneath whatever we return, so every one of those keys present in the parent is set
here explicitly and the child's environment is exactly this dict.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ALLOWED = frozenset({"PATH", "HOME", "LANG", "TZ", "TERM", "USER", "LOGNAME", "TMPDIR", "SHELL"})
# Where this machine's trusted CAs are (behind a TLS-inspecting network a launcher needs them).
TRUST = frozenset({"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "UV_NATIVE_TLS"})
ALLOWED_PREFIXES = ("LC_",)
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"

# Dropped even when a configured prefix matches (names compared upper-cased).
LOADER_AND_IPC = frozenset({
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "NODE_OPTIONS", "NODE_PATH",
    "BASH_ENV", "ENV", "PROMPT_COMMAND", "PERL5OPT", "PERL5LIB", "RUBYOPT", "RUBYLIB",
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXEC_PATH",
    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY",
    "XAUTHORITY", "DOCKER_HOST", "KUBECONFIG", "TMUX",
})  # fmt: skip
LOADER_AND_IPC_PREFIXES = ("LD_", "DYLD_", "GIT_CONFIG", "DBUS_")
CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")  # anywhere
CREDENTIAL_PARTS = frozenset({"AUTH", "AUTHORIZATION", "COOKIE", "COOKIES"})  # as a _-part: not AUTHOR
CREDENTIAL_PREFIXES = ("AWS_", "AZURE_", "GH_", "GITHUB_", "GOOGLE_APPLICATION_CREDENTIALS")
CREDENTIAL_SUFFIXES = ("_PAT", "_PROXY")  # proxy URLs often carry user:password


def is_forbidden(name: str) -> bool:
    """True for loader, IPC and credential-looking names, which no prefix can let through."""
    upper = name.upper()
    return (
        upper in LOADER_AND_IPC
        or upper.startswith(LOADER_AND_IPC_PREFIXES + CREDENTIAL_PREFIXES)
        or upper.endswith(CREDENTIAL_SUFFIXES)
        or any(word in upper for word in CREDENTIAL_WORDS)
        or not CREDENTIAL_PARTS.isdisjoint(upper.split("_"))
    )


# What the sandbox sets itself (the private home's folders and caches, the proxy): `secret_env`
# may not name them, nor a loader's or IPC variable.
SANDBOX_SET_PREFIXES = ("XDG_", "NPM_CONFIG_", "UV_", "PIP_")


def steers_the_child(name: str) -> bool:
    """True for a name the sandbox sets or that steers a loader: not one a server's secret may take."""
    upper = name.upper()
    return (
        upper in ALLOWED | TRUST | {"TMP", "TEMP", "NO_PROXY"} | LOADER_AND_IPC
        or upper.startswith(SANDBOX_SET_PREFIXES + LOADER_AND_IPC_PREFIXES)
        or upper.endswith("_PROXY")
    )


def sanitize_path(value: str, write_roots: tuple[Path, ...]) -> str:
    """Keep absolute entries outside every write root: a child must not plant binaries on PATH."""
    roots = [Path(os.path.realpath(root)) for root in write_roots]
    kept: list[str] = []
    for entry in value.split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        real = Path(os.path.realpath(entry))
        if not any(real.is_relative_to(root) for root in roots):
            kept.append(entry)
    return os.pathsep.join(kept)


def child_environment(
    parent: Mapping[str, str],
    *,
    home: Path,
    tmpdir: str,
    write_roots: tuple[Path, ...],
    prefixes: tuple[str, ...],
    server_env: Mapping[str, str],
    fixed: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Allowlist + configured prefixes (minus forbidden names), then HOME/TMPDIR and the sandbox's
    `fixed` values (private home folders, proxy), then server_env."""
    prefixes = tuple(p for p in prefixes if p)  # an empty prefix would pass the whole environment
    env: dict[str, str] = {}
    for name, value in parent.items():
        if value.startswith("()"):  # an exported bash function
            continue
        if (
            name in ALLOWED
            or name in TRUST
            or name.startswith(ALLOWED_PREFIXES)
            or (name.startswith(prefixes) and not is_forbidden(name))
        ):
            env[name] = value
    env["PATH"] = sanitize_path(env.get("PATH", DEFAULT_PATH), write_roots) or DEFAULT_PATH
    env["HOME"] = str(home)
    env["TMPDIR"] = env["TMP"] = env["TEMP"] = tmpdir
    env.update(fixed or {})
    env.update(server_env)
    return env
