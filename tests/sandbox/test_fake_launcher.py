"""Only the installed package launcher gets registry network, not any script named `npx` (issue 27).

The attack: the model writes a script named `npx` (or a symlink of that name) into the workspace
and adds it as a server; by its name alone it got the registry network through the bridge's
proxy. Now its network is the default (`deny`): the child sees no proxy at all. The twin is the
real `npx` on the bridge's PATH, which still gets `registry`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sandbox_box import Box

from sandbox import Plan, plan_launch

pytestmark = pytest.mark.bwrap
REAL_NPX = shutil.which("npx")


def plan(box: Box, command: str) -> Plan:
    return plan_launch(
        command, ["-y", "@modelcontextprotocol/server-everything"], cwd=box.ws, server_env={}, network=None,
        write_paths=(), config=box.config(), server_name="npx-server",
    )  # fmt: skip


def fake_npx(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    npx = folder / "npx"
    npx.write_text("#!/bin/sh\necho \"proxy=${HTTPS_PROXY:-none}\"\n")
    npx.chmod(0o755)
    return npx


def test_a_script_named_npx_in_the_workspace_gets_no_network(box: Box) -> None:
    npx = fake_npx(box.ws)
    planned = plan(box, str(npx))
    assert planned.network == "deny" and planned.policy.network == "deny"
    launch = box.launch(str(npx), [])
    assert launch.proxy is None
    proc = box.run(launch)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "proxy=none"


def test_a_script_named_npx_off_the_bridges_path_gets_no_network(box: Box) -> None:
    """Outside every writable root too: a launcher is the one the bridge's own PATH names."""
    assert plan(box, str(fake_npx(box.root / "bin"))).network == "deny"


@pytest.mark.skipif(REAL_NPX is None, reason="npx is not installed")
def test_a_workspace_symlink_to_the_real_npx_gets_no_network(box: Box) -> None:
    assert REAL_NPX is not None
    (box.ws / "npx").symlink_to(REAL_NPX)
    assert plan(box, str(box.ws / "npx")).network == "deny"


@pytest.mark.skipif(REAL_NPX is None, reason="npx is not installed")
def test_the_real_npx_gets_registry_network(box: Box) -> None:
    """Positive twin: the installed npx, by name or by its path, goes through the proxy."""
    assert REAL_NPX is not None
    for command in ("npx", REAL_NPX):
        planned = plan(box, command)
        assert planned.network == "registry" and planned.policy.network == "proxy", command
        assert "registry.npmjs.org" in planned.policy.allowed_hosts
