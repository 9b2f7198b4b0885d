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
from typing import Any, Literal

import pytest
from mcp.client.stdio import get_default_environment

from sandbox import Launch, SandboxConfig, prepare_launch
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

    def config(self, **changes: Any) -> SandboxConfig:
        values: dict[str, Any] = dict(
            backend="bubblewrap", workspace=self.ws, state_dir=self.state, network="deny"
        )
        return SandboxConfig(**(values | changes))

    def launch(
        self,
        command: str,
        args: list[str],
        *,
        server_network: Literal["deny", "allow"] | None = None,
        server_env: dict[str, str] | None = None,
        write_paths: tuple[str, ...] = (),
        **config: Any,
    ) -> Launch:
        """`server_*` and `write_paths` are the per-server settings; the rest changes the config."""
        return prepare_launch(
            command,
            args,
            cwd=self.ws,
            server_env=server_env or {},
            network=server_network,
            write_paths=write_paths,
            config=self.config(**config),
        )

    def run(self, launch: Launch, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Spawn the way the MCP SDK does: its default env merged under ours."""
        return subprocess.run(
            [launch.command, *launch.args],
            env=get_default_environment() | launch.env,
            cwd=launch.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def probe(self, action: str, *args: str, **launch_kw: Any) -> dict[str, Any]:
        """Run one `child_probe.py` action in the sandbox; returns its {"ok", "detail"} line."""
        launch = self.launch(self.python, ["-I", str(CHILD_PROBE), action, *args], **launch_kw)
        proc = self.run(launch)
        assert proc.returncode == 0, f"child failed to start: {proc.stderr}"
        return json.loads(proc.stdout.splitlines()[-1])
