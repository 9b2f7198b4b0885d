"""A program chain that passes through a writable root grants nothing outside it (issue 27).

Each plant is the real attack: the model makes a file in the workspace (a copied python beside a
`pyvenv.cfg` whose `home` names a folder of the real home, a script whose `#!` names a program
there, a symlink to one) and starts it as a server, hoping the sandbox shows the folder it named,
which holds a token. Each is refused before any spawn, with the reason, and the folder is not
exposed. Its positive twin plants the same kind of file pointing at a program children see anyway
(the system python), and it runs.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sandbox_box import Box

from sandbox import NotRunnable, plan_launch

pytestmark = pytest.mark.bwrap
TOKEN = "claude-desktop-token-stand-in"


def token_folder(box: Box, name: str) -> Path:
    """A folder of the (fake) real home holding a token, as Claude Desktop's config folder does."""
    folder = box.home / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "claude_desktop_config.json").write_text(TOKEN)
    return folder


def read_args(path: Path) -> list[str]:
    return ["-I", "-c", f"print(open({str(path)!r}).read())"]


def planted_venv(box: Box, home: str) -> Path:
    """A python copied (not linked) into the workspace beside a pyvenv.cfg naming `home`."""
    (box.ws / "venv" / "bin").mkdir(parents=True)
    python = box.ws / "venv" / "bin" / "python3"
    shutil.copy2(box.python, python)
    (box.ws / "venv" / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = false\n")
    return python


def script(box: Box, interpreter: str, body: str) -> Path:
    path = box.ws / "tool"
    path.write_text(f"#!{interpreter}\n{body}\n")
    path.chmod(0o755)
    return path


def assert_refused(box: Box, command: Path, args: list[str], folder: Path) -> None:
    plan = plan_launch(
        str(command), args, cwd=box.ws, server_env={}, network=None, write_paths=(), config=box.config(),
        server_name="plant",
    )  # fmt: skip
    assert plan.problem is not None and "folder children can write" in plan.problem, plan.problem
    assert str(box.ws) in plan.problem
    assert not any(folder.is_relative_to(tree) or tree.is_relative_to(folder) for tree in plan.policy.exposed)
    with pytest.raises(NotRunnable, match="is given nothing outside the writable folders"):
        box.launch(str(command), args)


def test_planted_pyvenv_cfg_home_does_not_expose_the_real_home(box: Box) -> None:
    folder = token_folder(box, ".config/Claude")
    python = planted_venv(box, str(folder))
    assert_refused(box, python, read_args(folder / "claude_desktop_config.json"), folder)


def test_workspace_venv_whose_home_is_the_system_python_runs(box: Box) -> None:
    python = planted_venv(box, os.path.dirname(box.python))
    (box.ws / "note.txt").write_text("from the workspace")
    proc = box.run(box.launch(str(python), read_args(box.ws / "note.txt")))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "from the workspace"


def test_planted_shebang_does_not_expose_the_real_home(box: Box) -> None:
    folder = token_folder(box, "tools")
    (folder / "bin").mkdir()
    (folder / "bin" / "interp").symlink_to(box.python)
    tool = script(box, str(folder / "bin" / "interp"), f"print(open({str(folder / 'claude_desktop_config.json')!r}).read())")
    assert_refused(box, tool, [], folder)


def test_workspace_script_with_a_system_interpreter_runs(box: Box) -> None:
    tool = script(box, box.python, "print('script ran')")
    proc = box.run(box.launch(str(tool), []))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "script ran"


def test_planted_symlink_does_not_expose_the_real_home(box: Box) -> None:
    folder = token_folder(box, "apps")
    (folder / "bin").mkdir()
    (folder / "bin" / "py").symlink_to(box.python)
    (box.ws / "run").symlink_to(folder / "bin" / "py")
    assert_refused(box, box.ws / "run", read_args(folder / "claude_desktop_config.json"), folder)


def test_workspace_symlink_to_the_system_python_runs(box: Box) -> None:
    (box.ws / "run").symlink_to(box.python)
    proc = box.run(box.launch(str(box.ws / "run"), ["-I", "-c", "print('linked python ran')"]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "linked python ran"


def venv_at(box: Box, prefix: Path, home: Path) -> Path:
    (prefix / "bin").mkdir(parents=True)
    shutil.copy2(box.python, prefix / "bin" / "python3")
    (prefix / "pyvenv.cfg").write_text(f"home = {home}\n")
    return prefix / "bin" / "python3"


def test_a_plant_in_another_servers_write_path_grants_nothing(box: Box) -> None:
    """Another server's `write_paths` is written by its child: a chain through it grants nothing here."""
    folder = token_folder(box, ".config/Claude")
    data = box.root / "data"
    python = venv_at(box, data / "venv", folder)
    plan = plan_launch(
        str(python), [], cwd=box.ws, server_env={}, network=None, write_paths=(),
        config=box.config(child_writable=(str(data),)), server_name="plant",
    )  # fmt: skip
    assert plan.problem is not None and f"only {data / 'venv' / 'pyvenv.cfg'} names it" in plan.problem
    assert not any(folder.is_relative_to(tree) for tree in plan.policy.exposed)


def test_a_venv_no_child_can_write_still_shows_its_base(box: Box) -> None:
    """Positive twin: the same venv where only the operator writes is followed as before."""
    folder = token_folder(box, ".config/Claude")
    python = venv_at(box, box.root / "opt" / "venv", folder)
    plan = plan_launch(
        str(python), [], cwd=box.ws, server_env={}, network=None, write_paths=(), config=box.config(),
        server_name="operator",
    )  # fmt: skip
    assert plan.problem is None and any(folder.is_relative_to(tree) for tree in plan.policy.exposed)
