"""Check the seatbelt sandbox for real on a Mac: the Linux escape matrix through `prepare_launch`.

    cd mcp-bridge && .venv/bin/python scripts/macos_sandbox_smoke.py

Prints one PASS/FAIL line per check and exits 1 if any check failed; INFO lines report what this
Mac's kernel does with RLIMIT_AS and RLIMIT_NPROC (why limits_guard.py watches memory and processes
itself). CI has no Mac, so run this before a release and whenever sandbox/seatbelt.py, proxy.py or
limits_guard.py change.
Everything happens in a throwaway tree under /private/var/tmp with a fake HOME; nothing outside
it is written. The proxy checks need the network: one CONNECT to registry.npmjs.org:443 goes
out through the bridge's filtering proxy (the only host contacted), and every child runs under the
default limits, so a prelude that broke starts would fail every line.
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

from anyio.from_thread import BlockingPortal, start_blocking_portal  # noqa: E402

from sandbox import FilteringProxy, Limits, SandboxConfig, SandboxUnavailable, finish_launch, prepare_launch  # noqa: E402

CHILD_PROBE = REPO / "tests" / "sandbox" / "child_probe.py"
CANARY = f"canary-{uuid.uuid4().hex}"
REGISTRY = ("registry.npmjs.org",)
DID_NOT_RUN = "child did not run"
RESULT = "import json, sys\ndef done(ok, detail): print(json.dumps({'ok': ok, 'detail': detail}))\n"
WRITE = RESULT + (
    "try:\n    with open(sys.argv[1], 'wb') as f:\n        f.write(b'x' * int(sys.argv[2]))\n"
    "except OSError as exc:\n    done(False, str(exc))\nelse:\n    done(True, 'written')"
)
HOLD = RESULT + (
    "import time\ndata = b'x' * (int(sys.argv[1]) << 20)\nif sys.argv[2] == 'stay':\n    time.sleep(30)\n"
    "done(True, 'allocated')"
)
SPAWN = RESULT + (
    "import subprocess\ntry:\n    procs = [subprocess.Popen(['/bin/sleep', '30']) for _ in range(int(sys.argv[1]))]\n"
    "except OSError as exc:\n    done(False, str(exc))\nelse:\n    [p.kill() for p in procs]\n    done(True, f'{len(procs)} started')"
)
OPEN = RESULT + (
    "kept = []\ntry:\n    for _ in range(int(sys.argv[1])):\n        kept.append(open('/dev/null'))\n"
    "except OSError as exc:\n    done(False, f'{len(kept)} opened, then {exc}')\nelse:\n    done(True, f'{len(kept)} opened')"
)


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
        self.proxy: tuple[FilteringProxy, BlockingPortal] | None = None  # set by main()
        self.last: dict[str, Any] = {}  # the last child's result, for the host-side conditions

    def probe(
        self,
        action: str,
        *args: str,
        network: str = "deny",
        state_dir: Path | None = None,
        server_network: tuple[str, ...] | None = None,
        limits: Limits | None = None,
    ) -> dict[str, Any]:
        """Run one child_probe.py action sandboxed; {"ok", "detail"}."""
        return self.run_python(["-I", str(CHILD_PROBE), action, *args], network=network, state_dir=state_dir,
                               server_network=server_network, limits=limits)  # fmt: skip

    def run_python(
        self,
        args: list[str],
        *,
        network: str = "deny",
        state_dir: Path | None = None,
        server_network: tuple[str, ...] | None = None,
        limits: Limits | None = None,
    ) -> dict[str, Any]:
        """Run this interpreter sandboxed with `args`; its last stdout line is the JSON result."""
        config = SandboxConfig(
            backend="seatbelt",
            workspace=self.ws,
            state_dir=state_dir or self.state,
            network=network,  # type: ignore[arg-type]
            homes_dir=self.root / "homes",
            limits=limits or Limits(),
        )
        launch = prepare_launch(
            sys.executable,
            args,
            cwd=self.ws,
            server_env={"SERVER_SETTING": "visible"},
            network=server_network,
            write_paths=(),
            config=config,
            server_name="smoke",
        )
        try:
            if launch.proxy is not None:
                assert self.proxy is not None, "a proxied check needs the proxy running"
                proxy, portal = self.proxy
                portal.call(proxy.listen, launch.proxy)
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
            self.last = {"ok": False, "detail": f"{DID_NOT_RUN} (exit {proc.returncode}): {proc.stderr.strip()}"}
        else:
            self.last = json.loads(proc.stdout.splitlines()[-1])
        return self.last

    def last_said(self, text: str) -> bool:
        """The last child ran and its detail holds `text` (a denial for the expected reason)."""
        return text in str(self.last.get("detail"))


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
        (
            "proxy network: CONNECT registry.npmjs.org:443 through the bridge's proxy",
            True,
            lambda: tree.probe("proxy_connect", "registry.npmjs.org", "443", server_network=REGISTRY),
            lambda: True,
        ),
        (
            "proxy network: CONNECT example.com refused by the proxy (not on the list)",
            False,
            lambda: tree.probe("proxy_connect", "example.com", "443", server_network=REGISTRY),
            lambda: tree.last_said("not on this server's network list"),
        ),
        (
            "proxy network: another loopback port (e.g. the bridge's HTTP face) denied",
            False,
            lambda: tree.probe("connect", "127.0.0.1", str(port), server_network=REGISTRY),
            lambda: tree.last_said("Error"),
        ),
        (
            "proxy network: a direct connection by name denied (no DNS, no direct TCP)",
            False,
            lambda: tree.probe("connect", "registry.npmjs.org", "443", server_network=REGISTRY),
            lambda: tree.last_said("Error"),
        ),
        (
            "file size: a 2 MiB write under a 1 MiB limit fails",
            False,
            lambda: tree.run_python(["-I", "-c", WRITE, str(ws / "big.bin"), str(2 << 20)], limits=Limits(file_bytes=1 << 20)),
            lambda: (ws / "big.bin").stat().st_size <= 1 << 20,
        ),
        (
            "file size: a 512 KiB write under a 1 MiB limit lands",
            True,
            lambda: tree.run_python(["-I", "-c", WRITE, str(ws / "small.bin"), str(512 << 10)], limits=Limits(file_bytes=1 << 20)),
            lambda: (ws / "small.bin").stat().st_size == 512 << 10,
        ),
        (
            "open files: 100 files under a limit of 64 fail",
            False,
            lambda: tree.run_python(["-I", "-c", OPEN, "100"], limits=Limits(open_files=64)),
            lambda: tree.last_said("Too many open files"),
        ),
        (
            "open files: 100 files under the default limit open",
            True,
            lambda: tree.run_python(["-I", "-c", OPEN, "100"]),
            lambda: True,
        ),
        (
            "memory: a child holding 1 GiB under a 512 MiB limit is killed by the guard",
            False,
            lambda: tree.run_python(["-I", "-c", HOLD, "1024", "stay"], limits=Limits(memory_bytes=512 << 20)),
            lambda: tree.last_said("memory limit hit"),
        ),
        (
            "memory: 64 MiB under a 512 MiB limit is held",
            True,
            lambda: tree.run_python(["-I", "-c", HOLD, "64", "leave"], limits=Limits(memory_bytes=512 << 20)),
            lambda: True,
        ),
        (
            "processes: 40 children under a limit of 16 are stopped (RLIMIT_NPROC or the guard)",
            False,
            lambda: tree.run_python(["-I", "-c", SPAWN, "40"], limits=Limits(processes=16)),
            lambda: tree.last_said("Resource temporarily unavailable") or tree.last_said("processes limit hit"),
        ),
        (
            "processes: 4 children under a limit of 16 start",
            True,
            lambda: tree.run_python(["-I", "-c", SPAWN, "4"], limits=Limits(processes=16)),
            lambda: True,
        ),
    ]


def kernel_limits_info() -> list[str]:
    """What this kernel does with the limits the sandbox leaves unset on macOS (see seatbelt.py)."""
    probe = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); print('accepted')"
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=30, check=False)
    memory = proc.stdout.strip() or (proc.stderr.strip().splitlines() or ["no output"])[-1]
    ps = subprocess.run(["/bin/ps", "-U", str(os.getuid()), "-o", "pid="], capture_output=True, text=True, timeout=30, check=False)
    return [
        f"RLIMIT_AS of 2 GiB set in a fresh python: {memory}",
        f"this user runs {len(ps.stdout.split())} processes, all counted by RLIMIT_NPROC (per user on macOS)",
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
    try:
        with start_blocking_portal() as portal:
            proxy = FilteringProxy()
            proxy_task, _ = portal.start_task(proxy.serve)
            tree.proxy = (proxy, portal)
            try:
                return run_checks(tree, listener.getsockname()[1])
            finally:
                proxy_task.cancel()
    finally:
        listener.close()
        shutil.rmtree(tree.root, ignore_errors=True)


def run_checks(tree: Tree, port: int) -> int:
    failures = 0
    try:
        for line in kernel_limits_info():
            print(f"INFO  {line}")
        for name, expected, action, host_ok in checks(tree, port):
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
    print(f"{failures} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
