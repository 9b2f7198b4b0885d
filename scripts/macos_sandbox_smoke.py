"""Check the seatbelt sandbox for real on a Mac: the Linux escape matrix through `prepare_launch`.

    cd mcp-bridge && .venv/bin/python scripts/macos_sandbox_smoke.py

Prints one PASS/FAIL line per check and exits 1 if any check failed. CI has no Mac, so run this
before a release and whenever sandbox/seatbelt.py changes. Everything happens in a throwaway tree
under /private/var/tmp with a fake HOME; nothing outside it is written.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sandbox import SandboxConfig, SandboxUnavailable, finish_launch, prepare_launch  # noqa: E402

CHILD_PROBE = REPO / "tests" / "sandbox" / "child_probe.py"
CANARY = f"canary-{uuid.uuid4().hex}"


class Tree:
    """A fake home, workspace and state dir, and a way to run child_probe.py sandboxed in them."""

    def __init__(self) -> None:
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix="mcp-smoke-", dir="/private/var/tmp")))
        self.home, self.ws, self.state = self.root / "home", self.root / "ws", self.root / "state"
        (self.home / ".ssh").mkdir(parents=True)
        (self.home / ".ssh" / "id_ed25519").write_text("stand-in key\n")
        (self.home / ".netrc").write_text("machine example.com password hunter2\n")
        (self.home / "public.txt").write_text("public\n")
        (self.ws / "sub").mkdir(parents=True)
        (self.ws / "readme.txt").write_text("readme\n")
        (self.ws / ".git" / "hooks").mkdir(parents=True)
        (self.ws / ".git" / "objects").mkdir()
        (self.ws / ".git" / "config").write_text("[core]\n")
        (self.ws / "work" / "tool_mcp").mkdir(parents=True)
        (self.ws / "work" / "tool_mcp" / "servers.json").write_text("{}")
        (self.state / "tool_mcp").mkdir(parents=True)
        (self.state / "tool_mcp" / "servers.json").write_text("{}")

    def probe(
        self, action: str, *args: str, network: str = "deny", state_dir: Path | None = None
    ) -> dict[str, Any]:
        config = SandboxConfig(
            backend="seatbelt",
            workspace=self.ws,
            state_dir=state_dir or self.state,
            network=network,  # type: ignore[arg-type]
            homes_dir=self.root / "homes",
        )
        launch = prepare_launch(
            sys.executable,
            ["-I", str(CHILD_PROBE), action, *args],
            cwd=self.ws,
            server_env={"SERVER_SETTING": "visible"},
            network=None,
            write_paths=(),
            config=config,
            server_name="smoke",
        )
        try:
            proc = subprocess.run(
                [launch.command, *launch.args],
                env=launch.env,
                cwd=launch.cwd,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        finally:
            finish_launch(launch)
        if proc.returncode != 0 or not proc.stdout:
            return {
                "ok": False,
                "detail": f"child did not run (exit {proc.returncode}): {proc.stderr.strip()}",
            }
        result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
        return result


def checks(tree: Tree, port: int) -> list[tuple[str, bool, Callable[[], dict[str, Any]], Callable[[], bool]]]:
    """(name, expected ok, action, host-side condition that must hold afterwards)."""
    ws, home = tree.ws, tree.home
    etc_file = f"/private/etc/mcp-smoke-{uuid.uuid4().hex}"
    return [
        (
            "write inside workspace",
            True,
            lambda: tree.probe("write", str(ws / "out.txt")),
            lambda: (ws / "out.txt").exists(),
        ),
        (
            "write into .git/objects denied (the whole git dir is read-only)",
            False,
            lambda: tree.probe("write", str(ws / ".git/objects/o")),
            lambda: not (ws / ".git/objects/o").exists(),
        ),
        (
            "git init in a subfolder denied (git dirs anywhere below a root)",
            False,
            lambda: tree.probe("write", str(ws / "sub/.git")),
            lambda: not (ws / "sub/.git").exists(),
        ),
        (
            "create .env at the workspace root denied",
            False,
            lambda: tree.probe("write", str(ws / ".env")),
            lambda: not (ws / ".env").exists(),
        ),
        (
            "write to HOME denied",
            False,
            lambda: tree.probe("write", str(home / "x")),
            lambda: not (home / "x").exists(),
        ),
        (
            "write to /etc denied",
            False,
            lambda: tree.probe("write", etc_file),
            lambda: not os.path.exists(etc_file),
        ),
        (
            "write .git/hooks denied",
            False,
            lambda: tree.probe("write", str(ws / ".git/hooks/pre-commit")),
            lambda: not (ws / ".git/hooks/pre-commit").exists(),
        ),
        (
            "write .git/config denied",
            False,
            lambda: tree.probe("write", str(ws / ".git/config")),
            lambda: (ws / ".git/config").read_text() == "[core]\n",
        ),
        (
            "create .vscode denied",
            False,
            lambda: tree.probe("write", str(ws / ".vscode")),
            lambda: not (ws / ".vscode").exists(),
        ),
        (
            "rename .git denied",
            False,
            lambda: tree.probe("rename", str(ws / ".git"), str(ws / "g2")),
            lambda: (ws / ".git").is_dir(),
        ),
        (
            "read public file in the real HOME denied (the home is private)",
            False,
            lambda: tree.probe("read", str(home / "public.txt")),
            lambda: True,
        ),
        (
            "read a file in the workspace",
            True,
            lambda: tree.probe("read", str(ws / "readme.txt")),
            lambda: True,
        ),
        (
            "read ~/.ssh key denied",
            False,
            lambda: tree.probe("read", str(home / ".ssh/id_ed25519")),
            lambda: True,
        ),
        ("read ~/.netrc denied", False, lambda: tree.probe("read", str(home / ".netrc")), lambda: True),
        (
            "read state registry denied",
            False,
            lambda: tree.probe("read", str(tree.state / "tool_mcp/servers.json")),
            lambda: True,
        ),
        (
            "read registry in workspace state dir denied",
            False,
            lambda: tree.probe("read", str(ws / "work/tool_mcp/servers.json"), state_dir=ws / "work"),
            lambda: True,
        ),
        ("write private TMPDIR", True, lambda: tree.probe("write_tmp", "t.txt"), lambda: True),
        (
            "write host /private/tmp denied",
            False,
            lambda: tree.probe("write", f"/private/tmp/mcp-smoke-{uuid.uuid4().hex}"),
            lambda: True,
        ),
        (
            "connect loopback with network deny",
            False,
            lambda: tree.probe("connect", "127.0.0.1", str(port)),
            lambda: True,
        ),
        (
            "connect loopback with network allow",
            True,
            lambda: tree.probe("connect", "127.0.0.1", str(port), network="allow"),
            lambda: True,
        ),
    ]


def main() -> int:
    if sys.platform != "darwin":
        print(
            "this smoke test is for macOS; on Linux run: REQUIRE_SANDBOX=1 pytest tests/sandbox",
            file=sys.stderr,
        )
        return 2
    tree = Tree()
    os.environ["HOME"] = str(tree.home)
    os.environ["BRIDGE_CANARY_TOKEN"] = CANARY
    listener = socket.create_server(("127.0.0.1", 0))
    failures = 0
    try:
        for name, expected, action, host_ok in checks(tree, listener.getsockname()[1]):
            result = action()
            passed = result["ok"] is expected and host_ok()
            failures += not passed
            print(f"{'PASS' if passed else 'FAIL'}  {name}  ({str(result['detail'])[:120]!r})")
        environ = tree.probe("own_environ")
        passed = environ["ok"] and CANARY not in json.dumps(environ) and "SERVER_SETTING" in environ["detail"]
        failures += not passed
        print(f"{'PASS' if passed else 'FAIL'}  bridge canary absent from child env, server env present")
    except SandboxUnavailable as exc:
        print(f"FAIL  seatbelt unavailable: {exc}")
        return 1
    finally:
        listener.close()
        shutil.rmtree(tree.root, ignore_errors=True)
    print(f"{failures} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
