"""The private home: each server gets its own, the real home is not visible at all, and what a
server needs to run (its interpreter chain, tool folders, read paths) is shown back read-only."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sandbox_box import Box

from sandbox import NotRunnable, home_path, remove_home

pytestmark = pytest.mark.bwrap

HOME_SECRETS = {
    ".config/Claude/claude_desktop_config.json": '{"mcpServers": {"x": {"env": {"TOKEN": "s3cret"}}}}',
    ".cloudflared/cert.pem": "s3cret",
    ".config/ngrok/ngrok.yml": "authtoken: s3cret",
    ".env": "OPENAI_API_KEY=s3cret",
    ".bashrc": "export GITHUB_TOKEN=s3cret",
    ".cache/huggingface/token": "hf_s3cret",
    ".local/share/fish/fish_history": "- cmd: export TOKEN=s3cret",
    ".config/containers/auth.json": '{"auths": {"r": {"auth": "s3cret"}}}',
    ".local/share/fastmcp/oauth.json": '{"token": "s3cret"}',
}


@pytest.mark.parametrize("relative", sorted(HOME_SECRETS))
def test_home_secret_is_unreadable_because_the_real_home_is_hidden(box: Box, relative: str) -> None:
    secret = box.home / relative
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text(HOME_SECRETS[relative])
    result = box.probe("read", str(secret))
    assert not result["ok"] and "s3cret" not in str(result["detail"])


def test_listing_the_real_home_shows_none_of_its_files(box: Box) -> None:
    listing = box.probe("listdir", str(box.home))
    assert listing["ok"] and "public.txt" not in listing["detail"] and ".ssh" not in listing["detail"]


def test_the_same_file_reads_when_the_developer_lists_it_in_read_paths(box: Box) -> None:
    """Positive twin: the hiding is the sandbox's, not the fixture's."""
    (box.home / "notes.txt").write_text("visible\n")
    result = box.probe("read", str(box.home / "notes.txt"), read_paths=(str(box.home / "notes.txt"),))
    assert result == {"ok": True, "detail": "visible\n"}


def test_child_home_is_private_writable_and_persists_across_launches(box: Box) -> None:
    home = home_path(box.homes, "box-server")
    assert box.probe("write", str(home / ".cache" / "x"))["ok"] is False  # no .cache yet: open() needs the dir
    assert box.probe("write", str(home / "kept.txt"))["ok"]
    assert (home / "kept.txt").read_text() == "written from the sandbox\n"
    assert box.probe("read", str(home / "kept.txt"))["ok"]  # a new launch sees it again


def test_other_servers_homes_are_hidden(box: Box) -> None:
    box.probe("write", str(home_path(box.homes, "other") / "secret.txt"), server_name="other")
    assert (home_path(box.homes, "other") / "secret.txt").exists()
    assert not box.probe("read", str(home_path(box.homes, "other") / "secret.txt"))["ok"]


def test_home_variables_point_into_the_private_home(box: Box) -> None:
    env = box.probe("own_environ")["detail"]
    home = str(home_path(box.homes, "box-server"))
    assert env["HOME"] == home and env["XDG_CACHE_HOME"] == f"{home}/.cache"
    assert env["npm_config_cache"] == f"{home}/.npm" and env["UV_CACHE_DIR"] == f"{home}/.cache/uv"


def test_remove_home_deletes_the_servers_home_only(box: Box) -> None:
    box.probe("write", str(home_path(box.homes, "box-server") / "f"))
    box.probe("write", str(home_path(box.homes, "other") / "f"), server_name="other")
    assert remove_home(box.homes, "box-server") and not home_path(box.homes, "box-server").exists()
    assert home_path(box.homes, "other").is_dir() and not remove_home(box.homes, "box-server")


def test_server_name_cannot_escape_the_homes_dir(box: Box) -> None:
    assert home_path(box.homes, "../../etc").parent == box.homes


# --- what a server needs to run -------------------------------------------------------------------


def fake_install(box: Box, prefix: str) -> Path:
    """A copy of a real interpreter installed under the fake home, like nvm or pyenv would."""
    tree = box.home / prefix
    (tree / "bin").mkdir(parents=True)
    shutil.copy2("/bin/echo", tree / "bin" / "tool")
    return tree / "bin" / "tool"


def test_program_installed_under_home_runs_via_its_install_tree(box: Box) -> None:
    tool = fake_install(box, ".nvm/versions/node/v0")
    assert box.run(box.launch(str(tool), ["started"])).stdout == "started\n"


def test_script_whose_shebang_names_an_interpreter_under_home_runs(box: Box) -> None:
    tool = fake_install(box, ".opt/runtime")
    script = box.home / ".opt" / "runtime" / "bin" / "server"
    script.write_text(f"#!{tool}\n")
    script.chmod(0o755)
    proc = box.run(box.launch(str(script), []))
    assert proc.returncode == 0 and str(script) in proc.stdout


def test_interpreter_in_a_hidden_folder_is_refused_before_spawn(box: Box) -> None:
    tool = fake_install(box, ".opt/runtime")
    script = box.root / "server"  # outside every writable root: no child could have written it
    script.write_text(f"#!{tool}\n")
    script.chmod(0o755)
    box.launch(str(script), [])  # the install tree is derived and exposed: runnable
    planted = box.ws / "server"  # the same script where a child can write: grants nothing
    planted.write_text(f"#!{tool}\n")
    planted.chmod(0o755)
    with pytest.raises(NotRunnable, match="folder children can write"):
        box.launch(str(planted), [])
    secret_dir = box.home / ".ssh" / "bin"
    secret_dir.mkdir()
    shutil.copy2("/bin/echo", secret_dir / "tool")
    script.write_text(f"#!{secret_dir / 'tool'}\n")
    with pytest.raises(NotRunnable, match=r"\.ssh.*hides"):
        box.launch(str(script), [])


def test_script_without_shebang_is_refused_before_spawn(box: Box) -> None:
    script = box.ws / "server.py"
    script.write_text("print('hi')\n")
    script.chmod(0o755)
    with pytest.raises(NotRunnable, match="#! line"):
        box.launch(str(script), [])


def test_file_that_is_not_executable_is_refused_before_spawn(box: Box) -> None:
    script = box.ws / "server.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(NotRunnable, match="not executable"):
        box.launch(str(script), [])
    script.chmod(0o755)
    assert box.run(box.launch(str(script), [])).stdout == "hi\n"  # positive twin


@pytest.mark.skipif(os.geteuid() != 0, reason="the bridge's venv under /root is masked only for root")
def test_command_under_a_masked_home_is_refused_before_spawn(box: Box) -> None:
    script = Path("/root") / f".mcp-sandbox-{box.root.name}"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    try:
        with pytest.raises(NotRunnable, match="/root"):
            box.launch(str(script), [])
    finally:
        script.unlink()
