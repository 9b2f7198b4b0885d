"""Every tool input either becomes a typed value or a `BridgeError("invalid_argument")`.

These are the checks of `bridge.tools.validation`, exercised as pure functions: names, urls, headers_json,
command, args_json, cwd, arguments_json, and the url-xor-command rule. Each rejection sits next to
the accepted input it differs from.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from bridge.errors import BridgeError
from bridge.models import HttpServerSpec, StdioServerSpec
from bridge.tools import validation


def rejected(func, *args, **kwargs) -> BridgeError:
    """Call `func` and return the invalid_argument error it must raise (any other outcome fails)."""
    with pytest.raises(BridgeError) as caught:
        func(*args, **kwargs)
    assert caught.value.code == "invalid_argument", caught.value.message
    assert caught.value.retryable is False
    return caught.value


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = (tmp_path / "ws").resolve()
    (ws / "sub" / "deeper").mkdir(parents=True)
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = (tmp_path / "outside").resolve()
    path.mkdir()
    return path


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "Z", "0", "my-server_2", "x" * 64], ids=["a", "Z", "digit", "mixed", "64-chars"])
def test_server_name_accepts_letters_digits_dash_underscore_up_to_64(name: str) -> None:
    assert validation.server_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", "x" * 65, "a b", "a.b", "a/b", "../x", "é", "a\n", "a\x00", 5, None],
    ids=["empty", "65-chars", "space", "dot", "slash", "traversal", "non-ascii", "trailing-newline", "nul", "int", "none"],
)
def test_server_name_rejects_anything_outside_the_pattern(name: object) -> None:
    error = rejected(validation.server_name, name)
    assert "64" in error.message


# -- url -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8000/mcp", "https://example.com/mcp", "https://example.com:8443/a/b?x=1"],
    ids=["http", "https", "https-port-query"],
)
def test_url_accepts_http_and_https_with_a_host(url: str) -> None:
    assert validation.url(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "javascript:alert(1)",
        "ws://example.com/mcp",
        "example.com/mcp",
        "http://",
        "http:///mcp",
        "http://exa mple.com/mcp",
        " http://example.com/mcp",
        "http://example.com/\nmcp",
        "http://example.com/\rmcp",
        "http://example.com/\tmcp",
        "http://example.com/\x00",
        "http://example.com/\x7f",
        "",
        "https://example.com/" + "a" * 2048,
        None,
    ],
    ids=[
        "file",
        "ftp",
        "javascript",
        "ws",
        "no-scheme",
        "no-host",
        "empty-host",
        "space-in-host",
        "leading-space",
        "newline",
        "carriage-return",
        "tab",
        "nul",
        "del",
        "empty",
        "too-long",
        "none",
    ],
)
def test_url_rejects_other_schemes_missing_host_spaces_and_control_characters(url: object) -> None:
    rejected(validation.url, url)


def test_url_with_a_malformed_ipv6_host_is_invalid_argument() -> None:
    rejected(validation.url, "http://[::1/mcp")


@pytest.mark.parametrize("char", ["\x85", "\x9b"], ids=["NEL", "CSI"])
def test_url_rejects_c1_control_characters(char: str) -> None:
    rejected(validation.url, f"http://example.com/{char}mcp")


# -- headers_json ----------------------------------------------------------------------------


def test_headers_json_accepts_an_object_of_strings() -> None:
    text = json.dumps({"Authorization": "Bearer abc.def", "X-Api-Key": "k\t1", "Accept": ""})
    assert validation.headers(text) == {"Authorization": "Bearer abc.def", "X-Api-Key": "k\t1", "Accept": ""}


@pytest.mark.parametrize("text", [None, "", "   "], ids=["none", "empty", "blank"])
def test_headers_json_empty_means_no_headers(text: str | None) -> None:
    assert validation.headers(text) == {}


@pytest.mark.parametrize(
    "text",
    ['["Authorization", "x"]', '"Authorization: x"', "42", "null", '{"X-Num": 1}', '{"X-List": ["a"]}', '{"X-Null": null}', "{oops"],
    ids=["array", "string", "number", "null", "int-value", "list-value", "null-value", "invalid-json"],
)
def test_headers_json_rejects_anything_but_an_object_of_strings(text: str) -> None:
    rejected(validation.headers, text)


@pytest.mark.parametrize(
    "name",
    ["", "X Header", "X:Header", "X-Héader", "X\r\nInjected", "X(1)", "a" * 257],
    ids=["empty", "space", "colon", "non-ascii", "crlf", "parenthesis", "too-long"],
)
def test_headers_json_rejects_invalid_header_names(name: str) -> None:
    rejected(validation.headers, json.dumps({name: "v"}))


@pytest.mark.parametrize(
    "value",
    [
        "Bearer SECRET-CANARY-1\r\nX-Injected: yes",
        "Bearer SECRET-CANARY-1\nX-Injected: yes",
        "Bearer SECRET-CANARY-1\r",
        "Bearer SECRET-CANARY-1\x00",
        "Bearer SECRET-CANARY-1\x7f",
        "Bearer SECRET-CANARY-1-é",
    ],
    ids=["crlf", "lf", "cr", "nul", "del", "non-ascii"],
)
def test_headers_json_rejects_multiline_or_unprintable_values_without_echoing_them(value: str) -> None:
    error = rejected(validation.headers, json.dumps({"Authorization": value}))
    assert "SECRET-CANARY" not in error.message
    assert "SECRET-CANARY" not in json.dumps(error.to_result().model_dump())
    assert "Authorization" in error.message  # the header is named, so the caller knows which one


def test_headers_json_that_is_not_json_is_rejected_without_echoing_the_secret() -> None:
    error = rejected(validation.headers, '{"Authorization": "Bearer SECRET-CANARY-2')
    assert "SECRET-CANARY" not in json.dumps(error.to_result().model_dump())


# -- command ---------------------------------------------------------------------------------


def _script(path: Path, mode: int) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return path


def command(value: object, path_env: str = "") -> str:
    return validation.command(value, path_env)


def test_command_accepts_an_absolute_executable_file(tmp_path: Path) -> None:
    script = _script(tmp_path / "server.sh", 0o755)
    assert command(str(script)) == str(script)


def test_command_accepts_the_running_python_interpreter() -> None:
    assert command(sys.executable) == sys.executable


def test_command_resolves_a_bare_name_on_path_to_the_program_it_will_run(tmp_path: Path) -> None:
    (tmp_path / "sbin").mkdir()
    (tmp_path / "bin").mkdir()
    npx = _script(tmp_path / "bin" / "npx", 0o755)
    assert command("npx", f"{tmp_path / 'sbin'}:{tmp_path / 'bin'}") == str(npx)


def test_command_an_unknown_name_says_which_name_it_looked_for_where_and_what_is_close(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    _script(tmp_path / "bin" / "npx", 0o755)
    _script(tmp_path / "bin" / "npm", 0o644)  # close too, but no program
    error = rejected(command, "npxx", f"{tmp_path / 'gone'}:{tmp_path / 'bin'}")
    assert error.message == (
        f"command 'npxx' is not on PATH: looked for 'npxx' in {tmp_path / 'gone'}, {tmp_path / 'bin'}; did you mean npx?"
    )


def test_command_a_guessed_absolute_path_names_the_program_of_that_name_on_path(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    npx = _script(tmp_path / "bin" / "npx", 0o755)
    error = rejected(command, str(tmp_path / "local" / "npx"), str(tmp_path / "bin"))
    assert error.message.endswith(f"does not exist or is not a file; npx on PATH is {npx} (or give just 'npx')")


def test_command_rejects_a_relative_path_with_a_directory_part(tmp_path: Path) -> None:
    _script(tmp_path / "server.sh", 0o755)
    error = rejected(command, "./server.sh", str(tmp_path))
    assert "absolute" in error.message


def test_command_rejects_a_missing_file(tmp_path: Path) -> None:
    rejected(command, str(tmp_path / "no-such-server"))


def test_command_rejects_a_directory(tmp_path: Path) -> None:
    rejected(command, str(tmp_path))


def test_command_rejects_a_file_without_execute_permission(tmp_path: Path) -> None:
    script = _script(tmp_path / "server.sh", 0o644)
    assert not stat.S_IMODE(script.stat().st_mode) & 0o111
    error = rejected(command, str(script))
    assert "executable" in error.message


@pytest.mark.parametrize("value", ["", None, 7, "/bin/\x00sh"], ids=["empty", "none", "int", "nul"])
def test_command_rejects_non_strings_and_nul_bytes(value: object) -> None:
    rejected(command, value)


def test_command_with_an_overlong_path_component_is_invalid_argument() -> None:
    rejected(command, "/" + "a" * 300)


# -- args_json -------------------------------------------------------------------------------


def test_args_json_accepts_an_array_of_strings() -> None:
    assert validation.args(json.dumps(["--flag", "value with spaces", ""])) == ("--flag", "value with spaces", "")


@pytest.mark.parametrize("text", [None, "", "  "], ids=["none", "empty", "blank"])
def test_args_json_empty_means_no_arguments(text: str | None) -> None:
    assert validation.args(text) == ()


@pytest.mark.parametrize(
    "text",
    ['"--flag"', "[1, 2]", '["a", 1]', '["a", null]', '[["nested"]]', '{"a": "b"}', "null", "[oops", json.dumps(["a\x00b"])],
    ids=["string", "numbers", "mixed", "null-item", "nested", "object", "null", "invalid-json", "nul-byte"],
)
def test_args_json_rejects_anything_but_an_array_of_strings(text: str) -> None:
    rejected(validation.args, text)


def test_args_json_rejects_more_than_256_arguments() -> None:
    assert len(validation.args(json.dumps(["a"] * 256))) == 256
    rejected(validation.args, json.dumps(["a"] * 257))


# -- cwd -------------------------------------------------------------------------------------


def test_cwd_defaults_to_the_workspace(workspace: Path) -> None:
    assert validation.cwd(None, workspace) == str(workspace)
    assert validation.cwd("", workspace) == str(workspace)


def test_cwd_absolute_path_inside_the_workspace_is_accepted(workspace: Path) -> None:
    assert validation.cwd(str(workspace / "sub"), workspace) == str(workspace / "sub")


def test_cwd_relative_path_is_resolved_against_the_workspace(workspace: Path) -> None:
    assert validation.cwd("sub/deeper", workspace) == str(workspace / "sub" / "deeper")


def test_cwd_absolute_path_outside_the_workspace_is_rejected(workspace: Path, outside: Path) -> None:
    rejected(validation.cwd, str(outside), workspace)


def test_cwd_tilde_is_expanded_to_home(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(workspace))
    assert validation.cwd("~/sub", workspace) == str(workspace / "sub")


def test_cwd_tilde_expanding_outside_the_workspace_is_rejected(
    workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(outside))
    rejected(validation.cwd, "~", workspace)


def test_cwd_dotdot_that_stays_inside_is_accepted(workspace: Path) -> None:
    assert validation.cwd("sub/deeper/..", workspace) == str(workspace / "sub")


def test_cwd_dotdot_traversal_out_of_the_workspace_is_rejected(workspace: Path, outside: Path) -> None:
    rejected(validation.cwd, "sub/../../outside", workspace)
    rejected(validation.cwd, str(workspace / ".." / "outside"), workspace)


def test_cwd_symlink_to_a_directory_inside_is_accepted_as_its_target(workspace: Path) -> None:
    (workspace / "link-in").symlink_to(workspace / "sub" / "deeper")
    assert validation.cwd("link-in", workspace) == str(workspace / "sub" / "deeper")


def test_cwd_symlink_escaping_the_workspace_is_rejected(workspace: Path, outside: Path) -> None:
    (workspace / "link-out").symlink_to(outside)
    error = rejected(validation.cwd, "link-out", workspace)
    assert error.detail["cwd"] == str(outside)


def test_cwd_that_is_not_an_existing_directory_is_rejected(workspace: Path) -> None:
    (workspace / "file.txt").write_text("x")
    rejected(validation.cwd, "no-such-dir", workspace)
    rejected(validation.cwd, "file.txt", workspace)


def test_cwd_with_an_unknown_users_tilde_is_invalid_argument(workspace: Path) -> None:
    rejected(validation.cwd, "~no-such-user-for-bridge-tests", workspace)


def test_cwd_with_an_overlong_path_component_is_invalid_argument(workspace: Path) -> None:
    rejected(validation.cwd, "a" * 300, workspace)


# -- arguments_json --------------------------------------------------------------------------


def test_arguments_json_accepts_an_object() -> None:
    assert validation.arguments('{"text": "hi", "n": [1, 2]}') == {"text": "hi", "n": [1, 2]}


def test_arguments_json_omitted_means_no_arguments() -> None:
    assert validation.arguments(None) == {}


@pytest.mark.parametrize("text", ["", "  \n"], ids=["empty", "blank"])
def test_arguments_json_empty_text_is_refused_not_taken_for_no_arguments(text: str) -> None:
    assert "arguments_json is empty" in rejected(validation.arguments, text).message


@pytest.mark.parametrize(
    "text",
    ["[1, 2]", '"text"', "42", "3.5", "true", "null", "{oops", "{'single': 'quotes'}", "[" * 100_000],
    ids=["array", "string", "int", "float", "bool", "null", "invalid", "python-literal", "deeply-nested"],
)
def test_arguments_json_rejects_anything_but_an_object(text: str) -> None:
    rejected(validation.arguments, text)


def test_arguments_json_given_as_the_object_itself_is_that_object() -> None:
    assert validation.arguments({"text": "hi", "n": [1, 2]}) == {"text": "hi", "n": [1, 2]}


@pytest.mark.parametrize("value", [{"x": float("nan")}, {"x": "\ud800"}, {"x": object()}], ids=["nan", "surrogate", "object"])
def test_arguments_json_as_an_object_must_be_strict_json(value: dict[str, object]) -> None:
    rejected(validation.arguments, value)


@pytest.mark.parametrize("value", [["a"], 42, True], ids=["list", "int", "bool"])
def test_arguments_json_of_another_type_is_refused(value: object) -> None:
    rejected(validation.arguments, value)


# -- exactly one of url / command ------------------------------------------------------------


def _spec(workspace: Path, **values: str | None):
    fields = {"url_value": None, "headers_json": None, "command_value": None, "args_json": None, "cwd_value": None}
    fields.update(values)
    return validation.server_spec(workspace=workspace, path_env="", **fields)


def test_url_alone_makes_an_http_spec_with_its_headers(workspace: Path) -> None:
    spec = _spec(workspace, url_value="https://example.com/mcp", headers_json='{"X-Key": "k"}')
    assert isinstance(spec, HttpServerSpec)
    assert (spec.url, spec.headers) == ("https://example.com/mcp", {"X-Key": "k"})


def test_command_alone_makes_a_stdio_spec_in_the_workspace(workspace: Path) -> None:
    spec = _spec(workspace, command_value=sys.executable, args_json='["-V"]')
    assert isinstance(spec, StdioServerSpec)
    assert (spec.command, spec.args, spec.cwd) == (sys.executable, ("-V",), str(workspace))


def test_a_stdio_spec_from_input_never_widens_the_sandbox(workspace: Path) -> None:
    spec = _spec(workspace, command_value=sys.executable)
    assert (spec.env, spec.network, spec.write_paths) == ({}, None, ())


def test_both_url_and_command_are_rejected(workspace: Path) -> None:
    error = rejected(_spec, workspace, url_value="https://example.com/mcp", command_value=sys.executable)
    assert "exactly one" in error.message


def test_neither_url_nor_command_is_rejected(workspace: Path) -> None:
    rejected(_spec, workspace)


def test_url_with_args_json_or_cwd_is_rejected(workspace: Path) -> None:
    rejected(_spec, workspace, url_value="https://example.com/mcp", args_json='["x"]')
    rejected(_spec, workspace, url_value="https://example.com/mcp", cwd_value="sub")


def test_command_with_headers_json_is_rejected(workspace: Path) -> None:
    rejected(_spec, workspace, command_value=sys.executable, headers_json='{"X-Key": "k"}')


def test_an_invalid_part_of_a_spec_is_reported_even_when_the_rest_is_valid(workspace: Path) -> None:
    rejected(_spec, workspace, command_value=sys.executable, cwd_value=os.sep)
