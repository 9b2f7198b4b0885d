"""The scrubbed child environment: allowlist, prefixes, hard denials, server env last, PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.environment import child_environment, sanitize_path

WS = Path("/srv/project")


def env_for(
    parent: dict[str, str], *, prefixes: tuple[str, ...] = (), server_env: dict[str, str] | None = None
) -> dict[str, str]:
    return child_environment(
        parent,
        home=Path("/home/alice"),
        tmpdir="/tmp",
        write_roots=(WS,),
        prefixes=prefixes,
        server_env=server_env or {},
    )


def test_allowlisted_variables_pass() -> None:
    parent = {"LANG": "en_US.UTF-8", "LC_TIME": "de_DE", "TZ": "UTC", "TERM": "xterm", "USER": "alice",
              "LOGNAME": "alice", "SHELL": "/bin/zsh"}  # fmt: skip
    assert env_for(parent).items() >= parent.items()


def test_unlisted_variable_is_dropped() -> None:
    assert "EDITOR" not in env_for({"EDITOR": "vim"})


def test_bridge_credentials_are_dropped() -> None:
    parent = {"OPENAI_API_KEY": "sk-1", "MCP_AUTH_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "a"}
    assert env_for(parent).keys().isdisjoint(parent)


def test_exported_bash_function_is_dropped_even_when_allowlisted() -> None:
    assert "TERM" not in env_for({"TERM": "() { evil; }"})


def test_home_and_temp_dirs_are_set() -> None:
    env = env_for({"HOME": "/somewhere/else", "TMPDIR": "/var/folders/x"})
    assert env["HOME"] == "/home/alice"
    assert env["TMPDIR"] == env["TMP"] == env["TEMP"] == "/tmp"


def test_every_key_the_mcp_sdk_would_merge_in_is_set_explicitly() -> None:
    parent = {key: f"/bridge-{key}" for key in ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")}
    env = env_for(parent)
    assert set(parent) <= set(env)
    assert env["HOME"] == "/home/alice"


def test_prefixed_variable_passes() -> None:
    assert env_for({"ACME_REGION": "eu"}, prefixes=("ACME_",))["ACME_REGION"] == "eu"


def test_unprefixed_variable_does_not_pass_with_prefixes_set() -> None:
    assert "OTHER_REGION" not in env_for({"OTHER_REGION": "eu"}, prefixes=("ACME_",))


def test_empty_prefix_does_not_pass_everything() -> None:
    assert "EDITOR" not in env_for({"EDITOR": "vim"}, prefixes=("",))


@pytest.mark.parametrize(
    "name",
    ["ACME_API_KEY", "ACME_TOKEN", "ACME_CLIENT_SECRET", "ACME_PASSWORD", "ACME_CREDENTIALS",
     "ACME_PAT", "ACME_AUTH", "ACME_HTTPS_PROXY", "acme_token"],
)  # fmt: skip
def test_credential_looking_variable_is_dropped_even_with_prefix(name: str) -> None:
    assert name not in env_for({name: "x"}, prefixes=("ACME_", "acme_"))


def test_author_is_not_mistaken_for_auth() -> None:
    assert env_for({"GIT_AUTHOR_NAME": "Alice"}, prefixes=("GIT_",))["GIT_AUTHOR_NAME"] == "Alice"


@pytest.mark.parametrize(
    "name",
    ["LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "PYTHONPATH", "PYTHONSTARTUP",
     "NODE_OPTIONS", "BASH_ENV", "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL", "SSH_AUTH_SOCK",
     "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "DOCKER_HOST", "KUBECONFIG"],
)  # fmt: skip
def test_loader_and_ipc_variables_are_dropped_even_with_matching_prefix(name: str) -> None:
    prefix = name.split("_")[0] + "_" if "_" in name else name
    assert name not in env_for({name: "x"}, prefixes=(prefix, name))


def test_allowed_twin_of_loader_prefix_passes() -> None:
    assert env_for({"PYTHONUNBUFFERED": "1"}, prefixes=("PYTHON",))["PYTHONUNBUFFERED"] == "1"


def test_server_env_is_added_last_and_wins() -> None:
    env = env_for(
        {"LANG": "C", "ACME_MODE": "bridge"},
        prefixes=("ACME_",),
        server_env={"LANG": "fr_FR.UTF-8", "ACME_MODE": "server", "GITHUB_TOKEN": "granted"},
    )
    assert (env["LANG"], env["ACME_MODE"], env["GITHUB_TOKEN"]) == ("fr_FR.UTF-8", "server", "granted")


def test_path_keeps_absolute_entries_outside_write_roots() -> None:
    assert sanitize_path("/usr/local/bin:/usr/bin:/bin", (WS,)) == "/usr/local/bin:/usr/bin:/bin"


def test_path_drops_empty_relative_and_workspace_entries() -> None:
    value = ":.:bin:~/bin:/usr/bin:/srv/project/node_modules/.bin:/srv/project:/srv/project-other/bin"
    assert sanitize_path(value, (WS,)) == "/usr/bin:/srv/project-other/bin"


def test_path_drops_symlink_into_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    (tmp_path / "tools").symlink_to(ws / "bin")
    assert sanitize_path(f"/usr/bin:{tmp_path / 'tools'}", (ws,)) == "/usr/bin"


def test_path_falls_back_to_system_default_when_nothing_is_left() -> None:
    assert env_for({"PATH": ".:/srv/project/bin"})["PATH"] == "/usr/local/bin:/usr/bin:/bin"
