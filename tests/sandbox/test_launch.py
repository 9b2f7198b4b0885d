"""prepare_launch: backend selection, what it returns, and which errors it raises."""

from __future__ import annotations

import logging
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp.client.stdio import get_default_environment
from sandbox_box import Box

import sandbox.launch
from sandbox import CommandNotFound, InvalidWorkspace, Launch, SandboxUnavailable, finish_launch
from sandbox.probe import select_backend


@pytest.fixture
def made() -> Iterator[Callable[[Launch], Launch]]:
    """Keeps the launches a test makes and never spawns, and finishes them afterwards (their
    placeholders, ledger entries and the gate's fds)."""
    launches: list[Launch] = []

    def keep(launch: Launch) -> Launch:
        launches.append(launch)
        return launch

    yield keep
    for launch in launches:
        finish_launch(launch)


def test_none_backend_warns_on_every_launch(box: Box, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_bridge.sandbox")
    for _ in range(2):
        box.launch("/usr/bin/true", [], backend="none")
    warnings = [r for r in caplog.records if r.name == "mcp_bridge.sandbox" and r.levelno == logging.WARNING]
    assert len(warnings) == 2 and "WITHOUT a sandbox" in warnings[0].getMessage()


def test_none_backend_runs_the_command_directly_with_a_scrubbed_env(
    box: Box, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRIDGE_CANARY_TOKEN", "canary")
    launch = box.launch("/usr/bin/env", ["-0"], backend="none")
    assert (launch.command, launch.args, launch.backend) == ("/usr/bin/env", ["-0"], "none")
    assert "BRIDGE_CANARY_TOKEN" not in launch.env and launch.env["HOME"] == str(box.home)


@pytest.mark.bwrap
def test_auto_picks_bubblewrap_on_linux(box: Box, made: Callable[[Launch], Launch]) -> None:
    launch = made(box.launch("/usr/bin/true", [], backend="auto"))
    assert launch.backend == "bubblewrap" and launch.command == "/usr/bin/bwrap"
    assert launch.args[-2:] == ["--", "/usr/bin/true"] and launch.placeholders


@pytest.mark.bwrap
def test_bubblewrap_launch_env_is_exactly_what_the_child_gets(
    box: Box, monkeypatch: pytest.MonkeyPatch, made: Callable[[Launch], Launch]
) -> None:
    monkeypatch.setenv("SHELL", "/bin/bash")
    monkeypatch.setenv("USER", "bridge-user")
    launch = made(box.launch("/usr/bin/true", [], backend="bubblewrap"))
    assert get_default_environment() | launch.env == launch.env
    assert launch.env["TMPDIR"] == "/tmp" and launch.env["HOME"] == str(box.homes / "box-server")


@pytest.mark.bwrap
def test_bare_command_is_resolved_on_the_child_path(box: Box, made: Callable[[Launch], Launch]) -> None:
    launch = made(box.launch("true", [], backend="bubblewrap"))
    assert launch.args[-1] == shutil.which("true", path=launch.env["PATH"])


@pytest.mark.bwrap
def test_unknown_bare_command_raises_file_not_found(box: Box) -> None:
    with pytest.raises(CommandNotFound, match="no-such-mcp-server"):
        box.launch("no-such-mcp-server", [], backend="bubblewrap")


@pytest.mark.bwrap
def test_missing_state_dir_is_created_so_it_can_be_masked(box: Box, made: Callable[[Launch], Launch]) -> None:
    state = box.root / "fresh-state"
    launch = made(box.launch("/usr/bin/true", [], state_dir=state))
    assert state.is_dir() and str(state) in launch.args


@pytest.mark.bwrap
def test_unsafe_workspace_is_refused_with_invalid_workspace(box: Box) -> None:
    with pytest.raises(InvalidWorkspace, match="home folder"):
        box.launch("/usr/bin/true", [], workspace=box.home)


@pytest.mark.skipif(sys.platform == "darwin", reason="seatbelt is the native backend on macOS")
def test_seatbelt_outside_macos_raises_with_install_hint(box: Box) -> None:
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        box.launch("/usr/bin/true", [], backend="seatbelt")


def test_bubblewrap_outside_linux_is_unavailable() -> None:
    with pytest.raises(SandboxUnavailable, match="needs Linux"):
        select_backend(
            "bubblewrap", platform="darwin", path_env="/usr/bin", workspace=Path("/w"), as_root=False
        )


def test_auto_on_an_unsupported_platform_is_unavailable() -> None:
    with pytest.raises(SandboxUnavailable, match="MCP_SANDBOX=none"):
        select_backend("auto", platform="win32", path_env="", workspace=Path("/w"), as_root=False)


def test_explicit_none_needs_no_probe() -> None:
    assert (
        select_backend("none", platform="win32", path_env="", workspace=Path("/w"), as_root=False).name
        == "none"
    )


@pytest.mark.bwrap
def test_a_launch_that_fails_after_making_its_placeholders_leaves_none(box: Box) -> None:
    blocker = box.homes / f".seccomp-{os.uname().machine}.bpf"  # a folder where the filter file goes
    blocker.mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        box.launch("/usr/bin/true", [])
    def held_here() -> list[Path]:
        return [path for path in sandbox.launch._held if path.is_relative_to(box.ws)]

    assert not (box.ws / ".vscode").exists() and not held_here()
    blocker.rmdir()  # the twin: the same launch, once it can be made, holds its placeholders
    launch = box.launch("/usr/bin/true", [])
    try:
        assert (box.ws / ".vscode").is_dir() and held_here()
    finally:
        finish_launch(launch)
