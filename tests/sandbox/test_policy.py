"""Policy derivation: which roots are refused, what gets masked, protected and pinned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.errors import InvalidWorkspace, SandboxUnavailable
from sandbox.policy import Mask, Policy, build_policy


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".netrc").write_text("x")
    (tmp_path / "home" / "code" / "proj").mkdir(parents=True)
    (tmp_path / "state").mkdir()
    return tmp_path


def policy(tree: Path, workspace: Path, **overrides: Any) -> Policy:
    args: dict[str, Any] = dict(
        workspace=workspace,
        home=tree / "home",
        state_dir=tree / "state",
        write_paths=(),
        network="deny",
        as_root=False,
        platform="linux",
    )
    return build_policy(**(args | overrides))


def test_project_folder_is_accepted(tree: Path) -> None:
    assert policy(tree, tree / "home" / "code" / "proj").workspace == tree / "home" / "code" / "proj"


def test_refuses_filesystem_root(tree: Path) -> None:
    with pytest.raises(InvalidWorkspace, match="filesystem root"):
        policy(tree, Path("/"))


def test_refuses_home(tree: Path) -> None:
    with pytest.raises(InvalidWorkspace, match="home folder"):
        policy(tree, tree / "home")


def test_refuses_ancestor_of_home(tree: Path) -> None:
    with pytest.raises(InvalidWorkspace, match="home folder or contains it"):
        policy(tree, tree)


def test_refuses_workspace_inside_denied_dir(tree: Path) -> None:
    (tree / "home" / ".ssh" / "keys").mkdir()
    with pytest.raises(InvalidWorkspace, match=r"inside .*\.ssh"):
        policy(tree, tree / "home" / ".ssh" / "keys")


def test_refuses_workspace_inside_state_dir(tree: Path) -> None:
    (tree / "state" / "ws").mkdir()
    with pytest.raises(InvalidWorkspace, match=r"inside .*state"):
        policy(tree, tree / "state" / "ws")


def test_refuses_workspace_containing_denied_path(tree: Path) -> None:
    other = tree / "elsewhere"
    (other / "aws").mkdir(parents=True)
    (tree / "home" / ".aws").symlink_to(other / "aws")
    with pytest.raises(InvalidWorkspace, match=r"contains .*aws"):
        policy(tree, other)


def test_invalid_workspace_is_reported_as_sandbox_unavailable() -> None:
    assert issubclass(InvalidWorkspace, SandboxUnavailable)


def test_workspace_containing_state_dir_is_accepted_and_state_dir_masked(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / "work").mkdir()
    result = policy(tree, ws, state_dir=ws / "work")
    assert Mask(ws / "work", "dir") in result.masks


def test_state_dir_nested_in_workspace_pins_its_parents(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / "var" / "work").mkdir(parents=True)
    assert policy(tree, ws, state_dir=ws / "var" / "work").pinned == (ws / "var",)


def test_secret_paths_are_masked(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / "tool_mcp").mkdir()
    (ws / "tool_mcp" / "servers.json").write_text("{}")
    result = policy(tree, ws, secret_paths=(ws / "tool_mcp" / "servers.json",))
    assert Mask(ws / "tool_mcp" / "servers.json", "file") in result.masks
    assert result.pinned == (ws / "tool_mcp",)


def test_masks_record_kind_and_absence(tree: Path) -> None:
    masks = {m.path: m.kind for m in policy(tree, tree / "home" / "code" / "proj").masks}
    home = tree / "home"
    assert (masks[home / ".ssh"], masks[home / ".netrc"], masks[home / ".aws"]) == ("dir", "file", "absent")


def test_mask_inside_masked_dir_is_dropped(tree: Path) -> None:
    masks = policy(tree, tree / "home" / "code" / "proj", secret_paths=(tree / "home" / ".ssh" / "x",)).masks
    assert all(m.path != tree / "home" / ".ssh" / "x" for m in masks)


def test_root_only_masks_apply_as_root(tree: Path) -> None:
    masks = {m.path for m in policy(tree, tree / "home" / "code" / "proj", as_root=True).masks}
    assert Path("/root") in masks


def test_root_only_masks_do_not_apply_as_user(tree: Path) -> None:
    masks = {m.path for m in policy(tree, tree / "home" / "code" / "proj").masks}
    assert Path("/root") not in masks and Path("/etc/shadow") not in masks


def test_darwin_masks_both_spellings_of_a_symlinked_secret(tree: Path) -> None:
    real = tree / "vault"
    real.mkdir()
    (tree / "home" / ".password-store").symlink_to(real)
    masks = {m.path for m in policy(tree, tree / "home" / "code" / "proj", platform="darwin").masks}
    assert {real, tree / "home" / ".password-store"} <= masks


def test_linux_masks_the_resolved_target_of_a_symlinked_secret(tree: Path) -> None:
    real = tree / "vault"
    real.mkdir()
    (tree / "home" / ".password-store").symlink_to(real)
    masks = {m.path for m in policy(tree, tree / "home" / "code" / "proj").masks}
    assert real in masks and tree / "home" / ".password-store" not in masks


def test_existing_protected_paths_are_kept_read_only_and_their_parents_pinned(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("")
    (ws / ".envrc").write_text("")
    result = policy(tree, ws)
    assert result.protected == (ws / ".git" / "hooks", ws / ".git" / "config", ws / ".envrc")
    assert result.pinned == (ws / ".git",)


def test_git_file_of_a_worktree_is_protected(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / ".git").write_text("gitdir: /elsewhere\n")
    assert policy(tree, ws).protected == (ws / ".git",)


def test_git_dir_itself_is_not_protected(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / ".git").mkdir()
    assert policy(tree, ws).protected == ()


def test_refuses_symlinked_protected_path(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (tree / "hooks").mkdir()
    (ws / ".git").mkdir()
    (ws / ".git" / "hooks").symlink_to(tree / "hooks")
    with pytest.raises(InvalidWorkspace, match="symlink"):
        policy(tree, ws)


def test_write_path_is_canonical_and_kept(tree: Path) -> None:
    (tree / "cache").mkdir()
    (tree / "cache-link").symlink_to(tree / "cache")
    result = policy(tree, tree / "home" / "code" / "proj", write_paths=(str(tree / "cache-link"),))
    assert result.write_roots == (tree / "cache",)


@pytest.mark.parametrize("bad", ["relative/cache", "/does/not/exist"])
def test_refuses_unusable_write_path(tree: Path, bad: str) -> None:
    with pytest.raises(InvalidWorkspace, match="write path"):
        policy(tree, tree / "home" / "code" / "proj", write_paths=(bad,))


def test_refuses_write_path_inside_denied_dir(tree: Path) -> None:
    with pytest.raises(InvalidWorkspace, match=r"write path .* lies inside"):
        policy(tree, tree / "home" / "code" / "proj", write_paths=(str(tree / "home" / ".ssh"),))


def test_refuses_write_path_that_is_home(tree: Path) -> None:
    with pytest.raises(InvalidWorkspace, match=r"write path .* home folder"):
        policy(tree, tree / "home" / "code" / "proj", write_paths=(str(tree / "home"),))
