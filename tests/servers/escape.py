"""Escape fixture: a FastMCP stdio server whose tools TRY things a sandbox must stop.

Every tool reports the outcome as text instead of raising, so a denial reaches the caller as a
normal tool result:

- ``write(path, text)``  -> ``"ok"`` or ``"denied: <errno name>"``
- ``save(path, text)``   -> ``"saved"``, or the tool's own error (the OSError's text), as most
  servers report a failed write
- ``read(path)``         -> the file's content or ``"denied: <errno name>"``
- ``connect(host, port)``-> ``"connected"`` or ``"refused: <errno name or exception>"``
- ``env()``              -> ``json.dumps(dict(os.environ))``
- ``proc_environ()``     -> every readable ``/proc/*/environ``, NULs as newlines, one
  ``== <pid> ==`` header per process (to prove no bridge secret is visible anywhere)

Self-contained: no project imports. ``--site DIR`` puts DIR first on ``sys.path`` before fastmcp
is imported, so an interpreter other than the venv's (e.g. ``/usr/bin/python3``, when the venv's
own python lives under a masked ``/root``) can still load fastmcp from the venv's site-packages.

Run: ``python escape.py [--site DIR]`` (stdio only).
"""

import errno
import json
import logging
import os
import socket
import sys

_argv = sys.argv[1:]
if "--site" in _argv:
    sys.path.insert(0, _argv[_argv.index("--site") + 1])

from fastmcp import FastMCP

logging.getLogger("fastmcp").setLevel(logging.WARNING)  # keep stderr quiet (no INFO lines)
logging.getLogger("mcp").setLevel(logging.WARNING)

mcp = FastMCP("escape-fixture")


def _reason(exc: BaseException) -> str:
    code = getattr(exc, "errno", None)
    if isinstance(code, int) and code in errno.errorcode:
        return errno.errorcode[code]
    return f"{type(exc).__name__}: {exc}"


@mcp.tool(description="Try to create/overwrite a file with the text: 'ok' or 'denied: <errno>'.")
def write(path: str, text: str) -> str:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        return f"denied: {_reason(exc)}"
    return "ok"


@mcp.tool(description="Write a file with the text, as most servers do: a refused write is the tool's error.")
def save(path: str, text: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return "saved"


@mcp.tool(description="Try to read a file: its content or 'denied: <errno>'.")
def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as exc:
        return f"denied: {_reason(exc)}"


@mcp.tool(description="Try a TCP connect: 'connected' or 'refused: <errno>'.")
def connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=5):
            return "connected"
    except OSError as exc:
        return f"refused: {_reason(exc)}"


@mcp.tool(description="This process's environment as a JSON object text.")
def env() -> str:
    return json.dumps(dict(os.environ), sort_keys=True)


@mcp.tool(description="Every readable /proc/<pid>/environ, concatenated (NULs shown as newlines).")
def proc_environ() -> str:
    parts = []
    for name in sorted(os.listdir("/proc")):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                data = f.read()
        except OSError as exc:
            parts.append(f"== {name} == unreadable: {_reason(exc)}")
            continue
        parts.append(f"== {name} ==\n" + data.replace(b"\0", b"\n").decode("utf-8", errors="replace"))
    return "\n".join(parts)


if __name__ == "__main__":
    mcp.run(show_banner=False)
