"""The test box: a fake home, workspace and state dir under /var/tmp, and helpers to run children.

Fixture trees live under /var/tmp, never /tmp: inside the sandbox /tmp is a private tmpfs, and a
stand-in ~/.ssh under it would be absent, so every read-deny test would pass vacuously.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp.client.stdio import get_default_environment

from sandbox import Launch, SandboxConfig, finish_launch, prepare_launch
from sandbox.network import NetworkSetting
from sandbox.probe import locate_bwrap, probe_bubblewrap

HERE = Path(__file__).resolve().parent
CHILD_PROBE = HERE / "child_probe.py"
REQUIRED = os.environ.get("REQUIRE_SANDBOX") == "1"
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- stand-in"


def bwrap_problem() -> str | None:
    """None when bubblewrap works here, else why not."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux, this is {sys.platform}"
    bwrap = locate_bwrap(os.environ.get("PATH", ""), HERE)
    if bwrap is None:
        return "bwrap is not installed"
    problem = probe_bubblewrap(bwrap, os.geteuid() == 0)
    return f"bwrap does not work here: {problem}" if problem else None


def spawn(launch: Launch, *, release: bool = True, **popen: Any) -> subprocess.Popen[Any]:
    """Spawn a launch the way the bridge does: its gate's fds passed, then (with `release`) the held
    child let go."""
    proc = subprocess.Popen([launch.command, *launch.args], env=get_default_environment() | launch.env,
                            cwd=launch.cwd, pass_fds=launch.pass_fds, start_new_session=True, **popen)  # fmt: skip
    if release and launch.gate is not None:
        launch.gate.release(proc.pid)
    return proc


def visible_python() -> str:
    """An interpreter the sandbox can run: /root is masked when the fake HOME is not /root."""
    for candidate in (os.path.realpath(sys.executable), "/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate) and not Path(candidate).is_relative_to("/root"):
            return candidate
    problem = "no python interpreter outside /root to run inside the sandbox"
    if REQUIRED:
        pytest.fail(problem)
    pytest.skip(problem)


@dataclass
class Box:
    """A fake home, workspace and state dir under /var/tmp, and helpers to run children there."""

    root: Path
    home: Path
    ws: Path
    state: Path
    python: str

    @property
    def homes(self) -> Path:
        return self.root / "homes"

    def config(self, **changes: Any) -> SandboxConfig:
        values: dict[str, Any] = dict(
            backend="bubblewrap", workspace=self.ws, state_dir=self.state, network="deny",
            homes_dir=self.homes, proxy_dir=Path(f"/tmp/mcp-box-{self.root.name[-8:]}"),
        )
        return SandboxConfig(**(values | changes))

    def launch(
        self,
        command: str,
        args: list[str],
        *,
        server_network: NetworkSetting | None = None,
        server_env: dict[str, str] | None = None,
        write_paths: tuple[str, ...] = (),
        read_paths: tuple[str, ...] = (),
        git_write_paths: tuple[str, ...] = (),
        server_name: str = "box-server",
        cwd: Path | None = None,
        **config: Any,
    ) -> Launch:
        """`server_*` and `*_paths` are the per-server settings; the rest changes the config."""
        return prepare_launch(
            command,
            args,
            cwd=cwd or self.ws,
            server_env=server_env or {},
            network=server_network,
            write_paths=write_paths,
            config=self.config(**config),
            server_name=server_name,
            read_paths=read_paths,
            git_write_paths=git_write_paths,
        )

    def run(self, launch: Launch, timeout: float = 30, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Spawn the way the MCP SDK does (its default env merged under ours), then finish."""
        try:
            stdin_from = subprocess.PIPE if stdin is not None else subprocess.DEVNULL
            proc = spawn(launch, stdin=stdin_from, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                out, err = proc.communicate(stdin, timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise
            return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        finally:
            finish_launch(launch)

    def probe(self, action: str, *args: str, **launch_kw: Any) -> dict[str, Any]:
        """Run one `child_probe.py` action in the sandbox; returns its {"ok", "detail"} line."""
        launch = self.launch(self.python, ["-I", str(CHILD_PROBE), action, *args], **launch_kw)
        proc = self.run(launch)
        assert proc.returncode == 0, f"child failed to start: {proc.stderr}"
        return json.loads(proc.stdout.splitlines()[-1])


GIT_ID = ["-c", "user.email=t@example.com", "-c", "user.name=t"]


def host_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The host's own git in `repo`, as a developer's `git status` runs it after the child."""
    return subprocess.run(["git", *GIT_ID, "-C", str(repo), *args], capture_output=True, text=True, check=False)
