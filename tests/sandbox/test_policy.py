"""Policy derivation: which roots are refused, what gets masked, protected and pinned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.errors import InvalidWorkspace, SandboxUnavailable
from sandbox.policy import Mask, Policy, build_policy, hidden_by


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


def test_existing_git_dir_and_config_paths_are_protected_whole(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".envrc").write_text("")
    result = policy(tree, ws)
    assert {ws / ".git", ws / ".envrc"} <= set(result.protected)
    assert ws / ".git" not in {p.path for p in result.placeholders}


def test_absent_guarded_paths_get_placeholders_of_their_kind(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    holders = {p.path: p.kind for p in policy(tree, ws).placeholders}
    assert (holders[ws / ".git"], holders[ws / ".vscode"], holders[ws / ".env"]) == ("dir", "dir", "file")
    assert holders[ws / ".mcp.json"] == "file" and holders[ws / "tool_mcp"] == "dir"


def test_held_placeholder_stays_a_placeholder_though_it_exists(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / ".vscode").mkdir()
    result = policy(tree, ws, held=frozenset({ws / ".vscode"}))
    assert ws / ".vscode" in {p.path for p in result.placeholders} and ws / ".vscode" not in result.protected


def test_git_file_protects_its_gitdir_target_and_commondir(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    main = ws / "main-git"
    (main / "worktrees" / "wt").mkdir(parents=True)
    (main / "worktrees" / "wt" / "commondir").write_text("../..\n")
    (ws / "wt").mkdir()
    (ws / "wt" / ".git").write_text(f"gitdir: {main / 'worktrees' / 'wt'}\n")
    result = policy(tree, ws)
    assert {ws / "wt" / ".git", main / "worktrees" / "wt", main} <= set(result.protected)


def test_nested_repository_is_protected_and_its_parents_pinned(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / "vendor" / "lib" / ".git").mkdir(parents=True)
    result = policy(tree, ws)
    assert ws / "vendor" / "lib" / ".git" in result.protected
    assert {ws / "vendor", ws / "vendor" / "lib"} <= set(result.pinned)


def test_git_write_path_leaves_that_repository_writable(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (ws / ".git").mkdir()
    (ws / "sub" / ".git").mkdir(parents=True)
    result = policy(tree, ws, git_write_paths=(str(ws / "sub"),))
    assert ws / ".git" in result.protected and ws / "sub" / ".git" not in result.protected


def test_refuses_symlinked_protected_path(tree: Path) -> None:
    ws = tree / "home" / "code" / "proj"
    (tree / "vscode").mkdir()
    (ws / ".vscode").symlink_to(tree / "vscode")
    with pytest.raises(InvalidWorkspace, match="symlink"):
        policy(tree, ws)


def private(tree: Path, **overrides: Any) -> Policy:
    homes = tree / "homes"
    return policy(
        tree, tree / "home" / "code" / "proj", private_home=homes / "srv", homes_dir=homes, **overrides
    )


def test_private_home_hides_the_real_home_and_the_other_homes(tree: Path) -> None:
    result = private(tree)
    assert result.hidden == (tree / "home", tree / "homes") and result.home == tree / "homes" / "srv"
    assert hidden_by(result, tree / "home" / "public.txt") == tree / "home"
    assert hidden_by(result, tree / "home" / "code" / "proj" / "x") is None  # the workspace shows through


def test_program_install_tree_under_home_is_exposed(tree: Path) -> None:
    node = tree / "home" / ".local" / "node" / "bin" / "node"
    node.parent.mkdir(parents=True)
    node.write_text("")
    result = private(tree, program_files=(node,))
    assert tree / "home" / ".local" / "node" in result.exposed
    assert hidden_by(result, node) is None


def test_tool_folder_holding_a_secret_is_not_exposed(tree: Path) -> None:
    (tree / "home" / ".nvm" / "versions").mkdir(parents=True)
    assert tree / "home" / ".nvm" in private(tree).exposed
    (tree / "home" / ".nvm" / ".ssh").mkdir()
    result = private(tree, secret_paths=(tree / "home" / ".nvm" / ".ssh",))
    assert tree / "home" / ".nvm" not in result.exposed


def test_read_path_is_exposed_and_one_around_a_secret_refused(tree: Path) -> None:
    (tree / "home" / "data").mkdir()
    assert tree / "home" / "data" in private(tree, read_paths=(str(tree / "home" / "data"),)).exposed
    with pytest.raises(InvalidWorkspace, match=r"read path .* contains .*\.ssh"):
        private(tree, read_paths=(str(tree / "home"),))


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
