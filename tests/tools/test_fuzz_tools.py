"""Hostile input to the four tools, generated with Hypothesis, through the Bridge's sync faces.

Every call must end in success or an `ErrorResult` carrying one of the `ErrorCode`s: never an
exception out of the face, never traceback text. Input that fails leaves the registry file as it
was (bytes, inode and mtime), and nothing is dialled: the registered servers point at a listening
socket of ours that must never see a connection. What is accepted must be usable as accepted (the
HTTP client parses the url, the command is an executable file, cwd lies inside the workspace).

The examples are derandomized, so CI tries the same inputs on every run; each test prints how many
it tried (`pytest -s`) and asserts a floor, so a strategy that filters everything away fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import httpx2
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bridge.errors import ErrorCode, ErrorResult
from bridge.models import (
    AddResult,
    HttpServerSpec,
    RemoveResult,
    ServerList,
    StdioServerSpec,
)
from bridge.settings import Settings
from bridge.tools import Bridge, Reply
from bridge.tools.validation import NAME_PATTERN

FUZZ = settings(
    max_examples=500,
    derandomize=True,  # the same inputs on every run: a CI failure reproduces locally
    database=None,
    deadline=None,  # one example may write the registry (fsync) or decode 1 MB of JSON
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example, HealthCheck.data_too_large],
)
MIN_TRIED = 400  # fewer means a strategy's filters rejected most of what it drew
TRIED: Counter[str] = Counter()
CODES = frozenset(get_args(ErrorCode))
SEED, PROVISIONED = "seed", "provisioned"
HEADER_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


# -- the bridge under fire ---------------------------------------------------------------------


@dataclass
class Target:
    """One Bridge for the whole module, its workspace, and the socket its servers point at."""

    bridge: Bridge
    workspace: Path
    registry: Path
    listener: socket.socket

    def snapshot(self) -> tuple[bytes, int, int]:
        stat = self.registry.stat()
        return self.registry.read_bytes(), stat.st_ino, stat.st_mtime_ns

    def assert_not_dialled(self) -> None:
        try:
            peer, _ = self.listener.accept()
        except BlockingIOError:
            return
        peer.close()
        pytest.fail("a registered server was dialled for input that should have failed validation")


def _workspace(ws: Path) -> None:
    """Paths the strategies aim at: escapes by symlink, loops, files that are no command."""
    (ws / "sub" / "deeper").mkdir(parents=True)
    (ws / "bin" / "dir").mkdir(parents=True)
    server = ws / "bin" / "server.sh"
    server.write_text("#!/bin/sh\nexit 0\n")
    server.chmod(0o755)
    (ws / "bin" / "data.txt").write_text("not a program\n")
    (ws / "bin" / "data.txt").chmod(0o644)
    (ws / "bin" / "link-to-server").symlink_to(server)
    (ws / "to-root").symlink_to("/")
    (ws / "to-etc").symlink_to("/etc")
    (ws / "to-parent").symlink_to("..")
    (ws / "to-sub").symlink_to(ws / "sub")
    (ws / "loop-a").symlink_to(ws / "loop-b")
    (ws / "loop-b").symlink_to(ws / "loop-a")
    (ws / "dangling").symlink_to(ws / "no-such-dir")
    (ws / "file.txt").write_text("x\n")


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    base = Path(tempfile.mkdtemp(prefix="bridge-fuzz-", dir="/var/tmp")).resolve()
    ws, state = base / "ws", base / "state"
    ws.mkdir()
    _workspace(ws)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    bridge = Bridge(
        Settings(workspace=ws, state_dir=state, timeout=30),
        {PROVISIONED: {"transport": "http", "url": url}},
    )
    try:
        assert not bridge.add_server(SEED, url=url, headers_json='{"Authorization": "Bearer seed"}').is_error
        yield Target(bridge=bridge, workspace=ws, registry=bridge.settings.registry_path, listener=listener)
        assert list(bridge.registry.dynamic()) == [SEED], "the fuzzing left dynamic entries behind or lost the seed"
        print("inputs tried per tool:", dict(TRIED))
    finally:
        bridge.close()
        listener.close()
        shutil.rmtree(base, ignore_errors=True)


# -- strategies --------------------------------------------------------------------------------

WRONG_TYPES = st.one_of(
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
)
SPECIALS = st.sampled_from(
    ["\x00", "\r", "\n", "\r\n", "\t", " ", "\x7f", "\x85", "\x9b", "\u2028", "\ufeff", "\u202e", "\ud800", "\udfff", "%00", "%0d%0a"]
)
# Hypothesis shrinks and replays better with a few fixed huge values than with megabytes drawn.
HUGE = st.sampled_from(["a" * 1_000_001, "é" * 600_000, "x" * 4097, "\x00" * 70_000])
# Deeper than the interpreter's recursion limit: json.loads raises RecursionError on these.
DEEP_JSON = st.sampled_from(
    [
        "[" * 10_000,
        "[" * 10_000 + "]" * 10_000,
        '{"a":' * 10_000 + "1" + "}" * 10_000,
        '{"a":' + "[" * 10_000 + "]" * 10_000 + "}",
    ]
)
DEEP_BUT_DECODABLE = '{"a":' + "[" * 900 + "]" * 900 + "}"
ANY_TEXT = st.text(st.characters(categories=["L", "M", "N", "P", "S", "Z", "C"]), max_size=80)
SPICED = st.builds(lambda a, b, c: a + b + c, st.text(max_size=20), SPECIALS, st.text(max_size=20))
HOSTILE_TEXT = st.one_of(ANY_TEXT, SPICED, HUGE, st.just(""))
HOSTILE = st.one_of(HOSTILE_TEXT, st.none(), WRONG_TYPES)


VALID_NAME = st.from_regex(NAME_PATTERN, fullmatch=True)
NAMES = st.one_of(
    VALID_NAME,
    st.sampled_from(["a\n", "a\r\nb", "../x", "a/b", "x" * 65, "é", "a b", "a.b", "a\x00", "-", "_"]),
    HOSTILE,
)
UNREGISTERED = NAMES.filter(lambda name: name not in (SEED, PROVISIONED))

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
JSON_VALUES = st.recursive(
    JSON_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12
)
NOT_JSON = st.sampled_from(
    [
        "{oops",
        "{'single': 'quotes'}",
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": -Infinity}',
        '{"a": 1e999}',
        '{"a": "\\ud800"}',
        '{"\\udfff": 1}',
        '{"a": ' + "1" * 5000 + "}",
        '{"a": 1} trailing',
        "\ufeff{}",
        '{"a": 1,}',
    ]
)


def json_text(values: st.SearchStrategy[Any] = JSON_VALUES) -> st.SearchStrategy[str]:
    return values.map(json.dumps)


INVALID_ARGUMENTS = st.one_of(
    json_text(st.one_of(JSON_SCALARS, st.lists(JSON_VALUES, max_size=3))),  # JSON, but no object
    NOT_JSON,
    DEEP_JSON,
    HUGE,
    WRONG_TYPES.filter(lambda value: not isinstance(value, dict)),  # an object itself is taken as the arguments
    st.sampled_from(["", " ", "\n\t"]),  # empty text is a mistake, not `{}`
)
ARGUMENTS = st.one_of(
    json_text(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4)),
    st.just(DEEP_BUT_DECODABLE),
    INVALID_ARGUMENTS,
    SPICED,
    st.none(),
)

HEADER_NAMES = st.one_of(
    st.from_regex(HEADER_TOKEN, fullmatch=True).filter(lambda name: len(name) <= 256),
    st.builds(lambda a, b: a + b, st.sampled_from(["X-Key", "Authorization", ""]), SPECIALS),
    st.sampled_from(["X Key", "X:Key", "X-Héader", "X-Key\r\nInjected", "a" * 257, "X(1)"]),
)
HEADER_VALUES = st.one_of(
    st.from_regex(r"[\t\x20-\x7e]{0,40}", fullmatch=True),
    st.builds(lambda a, b, c: a + b + c, st.just("Bearer s"), SPECIALS, st.sampled_from(["", "X-Injected: yes"])),
    st.sampled_from(["v" * 8193, "é"]),
    JSON_VALUES.filter(lambda value: not isinstance(value, str)),
)
HEADERS = st.one_of(
    json_text(st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=4)),
    json_text(st.dictionaries(st.from_regex(HEADER_TOKEN, fullmatch=True), st.from_regex(r"[\x20-\x7e]{0,20}", fullmatch=True), max_size=3)),
    INVALID_ARGUMENTS,
    st.sampled_from(['{"X-Key": "a\\u0000b"}', '{"X-Key": "a\\r\\nX-Evil: 1"}', '{"X-Key\\n": "v"}']),
    HOSTILE,
)

HOSTS = st.sampled_from(
    [
        "example.com",
        "127.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[fe80::1%25eth0]",
        "[::1",
        "::1",
        "[::1]x",
        "999.1.1.1",
        "1.2.3.4.5",
        "0x7f.1",
        "\u3002",
        "xn--",
        "exa mple.com",
        "例え.テスト",
        "user:pass@example.com",
        "user@example.com",
        ":pass@example.com",
        "example.com:0",
        "example.com:65535",
        "example.com:65536",
        "example.com:99999",
        "example.com:-1",
        "example.com:x",
        "example.com:",
        "",
    ]
)
SCHEMES = st.sampled_from(["http://", "https://", "HTTP://", "file://", "file:", "ftp://", "javascript:", "data:", "ws://", "gopher://", "//", ""])
PATHS = st.one_of(st.sampled_from(["", "/", "/mcp", "/../../etc/passwd", "/%2e%2e/", "/?q=1#f"]), st.builds(lambda a, b: "/" + a + b, st.text(max_size=10), SPECIALS))
URLS = st.one_of(st.builds(lambda scheme, host, path: scheme + host + path, SCHEMES, HOSTS, PATHS), HOSTILE)


@dataclass(frozen=True)
class WorkspacePath:
    """A path relative to the module's workspace, made absolute once the workspace exists."""

    relative: str

    def resolve(self, workspace: Path) -> str:
        return str(workspace / self.relative)


COMMANDS = st.one_of(
    st.sampled_from(
        [
            WorkspacePath("bin/server.sh"),
            WorkspacePath("bin/link-to-server"),
            WorkspacePath("bin/data.txt"),
            WorkspacePath("bin/dir"),
            WorkspacePath("bin/no-such"),
            WorkspacePath("bin/../bin/server.sh"),
            WorkspacePath("to-etc/passwd"),
            WorkspacePath("loop-a"),
            sys.executable,
            "/bin/sh",
            "/",
            "/etc",
            "/etc/passwd",
            "python3",
            "./server.sh",
            "bin/server.sh",
            "~/server.sh",
            "/" + "a" * 300,
            "/bin/sh\x00x",
        ]
    ),
    HOSTILE,
)
ARGS = st.one_of(
    json_text(st.lists(st.text(max_size=20), max_size=5)),
    st.just(json.dumps(["a"] * 257)),
    st.sampled_from(['["a\\u0000b"]', '["\\ud800"]', '[["nested"]]', '["a", 1]', '"--flag"']),
    INVALID_ARGUMENTS,
    HOSTILE,
)
CWDS = st.one_of(
    st.sampled_from(
        [
            ".",
            "sub",
            "sub/deeper/..",
            "to-sub",
            "..",
            "../..",
            "sub/../../",
            "to-root",
            "to-etc",
            "to-etc/ssl",
            "to-parent",
            "to-parent/ws",
            "loop-a",
            "dangling",
            "file.txt",
            "/",
            "/etc",
            "~",
            "~root",
            "~no-such-user-for-bridge-fuzz",
            "a" * 300,
            "x/" * 3000,
            WorkspacePath("sub"),
            WorkspacePath("../state"),
            WorkspacePath("to-root/etc"),
        ]
    ),
    HOSTILE,
)


def concrete(value: Any, workspace: Path) -> Any:
    return value.resolve(workspace) if isinstance(value, WorkspacePath) else value


# -- the invariants ----------------------------------------------------------------------------


def classified(reply: object, allowed: frozenset[str] = CODES) -> Reply:
    """A `Reply`, and when it failed, an `ErrorResult` with one of `allowed` and no traceback text."""
    assert isinstance(reply, Reply)
    assert "Traceback" not in reply.text and 'File "' not in reply.text, reply.text
    reply.text.encode()  # a host must be able to send it
    if reply.is_error:
        assert isinstance(reply.data, ErrorResult)
        assert reply.data.code in allowed, reply.text
        assert reply.text.startswith(f"Error [{reply.data.code}]")
    return reply


def wrong_type(*values: Any) -> bool:
    return any(value is not None and not isinstance(value, str) for value in values)


def run(check: Callable[[], None], tool: str) -> None:
    """Run one Hypothesis check and count its inputs, so filters cannot quietly empty a strategy."""
    start = TRIED[tool]
    check()
    print(f"{tool}: {TRIED[tool] - start} inputs")
    assert TRIED[tool] - start >= MIN_TRIED


def check_failed_cleanly(target: Target, before: tuple[bytes, int, int], reply: Reply) -> None:
    assert target.snapshot() == before, f"a failed call changed the registry: {reply.text}"
    target.assert_not_dialled()


# -- mcp_list_tools ----------------------------------------------------------------------------


def test_list_tools_survives_hostile_servers_and_tool_names(target: Target) -> None:
    @FUZZ
    @given(server=UNREGISTERED, tool=NAMES)
    @example(server=None, tool=None)
    @example(server="a" * 1_000_001, tool="x")
    @example(server="nope", tool="\x00")
    @example(server=None, tool="x")
    def check(server: Any, tool: Any) -> None:
        TRIED["mcp_list_tools"] += 1
        before = target.snapshot()
        reply = classified(target.bridge.list_tools(server, tool), frozenset({"invalid_argument", "unknown_server"}))
        if not reply.is_error:  # only "no server, no tool": the listing
            assert isinstance(reply.data, ServerList)
            assert {SEED, PROVISIONED} <= {info.name for info in reply.data.servers}
            assert "Bearer seed" not in reply.text
        elif wrong_type(server):
            assert reply.data.code == "invalid_argument"
        check_failed_cleanly(target, before, reply)

    run(check, "mcp_list_tools")


INVALID_TOOL_NAMES = st.one_of(
    st.sampled_from(["\x00", "a\x00b", "x" * 257, "x" * 1_000_001]),
    WRONG_TYPES.filter(bool),
)


def test_list_tools_of_a_registered_server_rejects_bad_tool_names_before_dialling(target: Target) -> None:
    @FUZZ
    @given(server=st.sampled_from([SEED, PROVISIONED]), tool=INVALID_TOOL_NAMES)
    def check(server: str, tool: Any) -> None:
        TRIED["mcp_list_tools"] += 1
        before = target.snapshot()
        reply = classified(target.bridge.list_tools(server, tool), frozenset({"invalid_argument"}))
        assert reply.is_error
        check_failed_cleanly(target, before, reply)

    run(check, "mcp_list_tools")


# -- mcp_call_tool -----------------------------------------------------------------------------


def test_call_tool_survives_hostile_input_and_dials_nothing(target: Target) -> None:
    @FUZZ
    @given(server=UNREGISTERED, tool=NAMES, arguments=ARGUMENTS)
    @example(server="nope", tool="t", arguments="[" * 10_000)
    @example(server=5, tool=[], arguments={"a": 1})
    @example(server="nope", tool="t", arguments="a" * 1_000_001)
    def check(server: Any, tool: Any, arguments: Any) -> None:
        TRIED["mcp_call_tool"] += 1
        before = target.snapshot()
        reply = classified(target.bridge.call_tool(server, tool, arguments), frozenset({"invalid_argument", "unknown_server"}))
        assert reply.is_error
        valid_name = isinstance(server, str) and NAME_PATTERN.fullmatch(server) is not None
        assert reply.data.code == ("unknown_server" if valid_name else "invalid_argument"), reply.text
        check_failed_cleanly(target, before, reply)

    run(check, "mcp_call_tool")


def test_call_tool_on_a_registered_server_rejects_bad_input_before_dialling(target: Target) -> None:
    @FUZZ
    @given(
        server=st.sampled_from([SEED, PROVISIONED]),
        call=st.one_of(
            st.tuples(INVALID_TOOL_NAMES, ARGUMENTS),
            st.tuples(st.text(min_size=1, max_size=20).filter(lambda name: "\x00" not in name), INVALID_ARGUMENTS),
        ),
    )
    # Python's json takes these; before the fix they were sent on, so the server was dialled.
    @example(server=SEED, call=("echo", '{"a": NaN}'))
    @example(server=SEED, call=("echo", '{"a": 1e999}'))
    @example(server=SEED, call=("echo", '{"a": "\\ud800"}'))
    @example(server=SEED, call=("echo", '{"a":' + "[" * 10_000 + "]" * 10_000 + "}"))
    def check(server: str, call: tuple[Any, Any]) -> None:
        TRIED["mcp_call_tool"] += 1
        tool, arguments = call
        before = target.snapshot()
        reply = classified(target.bridge.call_tool(server, tool, arguments), frozenset({"invalid_argument"}))
        assert reply.is_error, reply.text
        check_failed_cleanly(target, before, reply)

    run(check, "mcp_call_tool")


# -- mcp_add_server ----------------------------------------------------------------------------


def check_accepted(target: Target, name: str, reply: Reply) -> None:
    """What was stored is usable as stored; then it is removed, leaving the registry as it was."""
    assert isinstance(reply.data, AddResult)
    spec = target.bridge.registry.dynamic()[name]
    if isinstance(spec, HttpServerSpec):
        parsed = httpx2.URL(spec.url)  # the transport's parser takes it
        assert parsed.scheme in ("http", "https") and parsed.host
        assert not parsed.userinfo, "a url with credentials would be listed back to the model"
        assert 0 <= (parsed.port or 80) <= 65535
        for header, value in spec.headers.items():
            assert HEADER_TOKEN.fullmatch(header)
            assert re.fullmatch(r"[\t\x20-\x7e]*", value)
    else:
        assert isinstance(spec, StdioServerSpec)
        assert os.path.isabs(spec.command) and os.path.isfile(spec.command) and os.access(spec.command, os.X_OK)
        assert spec.cwd is not None and Path(spec.cwd).resolve() == Path(spec.cwd)
        assert Path(spec.cwd).is_dir() and Path(spec.cwd).is_relative_to(target.workspace)
        assert all("\x00" not in arg for arg in spec.args)
        assert (spec.env, spec.network, spec.write_paths) == ({}, None, ())
    removed = classified(target.bridge.remove_server(name), frozenset())
    assert isinstance(removed.data, RemoveResult)
    assert removed.data.restored_config_entry == (name == PROVISIONED)
    assert list(target.bridge.registry.dynamic()) == [SEED]


GOOD_URLS = st.builds(
    lambda scheme, host, path: scheme + host + path,
    st.sampled_from(["http://", "https://"]),
    st.sampled_from(["example.com", "127.0.0.1:8080", "[::1]", "例え.テスト"]),
    st.sampled_from(["", "/mcp", "/a/b?x=1"]),
)
GOOD_COMMANDS = st.sampled_from([WorkspacePath("bin/server.sh"), WorkspacePath("bin/link-to-server"), sys.executable])
ADD_NAMES = NAMES.filter(lambda name: name != SEED)
FIELDS = ("url", "headers_json", "command", "args_json", "cwd")
# Three shapes, so valid specs come up often enough to test the success path too.
ADD_CALLS = st.one_of(
    st.fixed_dictionaries(
        {"name": ADD_NAMES, **{field: st.none() | values for field, values in zip(FIELDS, (URLS, HEADERS, COMMANDS, ARGS, CWDS))}}
    ),
    st.fixed_dictionaries({"name": VALID_NAME, "url": GOOD_URLS | URLS}, optional={"headers_json": HEADERS}),
    st.fixed_dictionaries(
        {"name": VALID_NAME, "command": GOOD_COMMANDS | COMMANDS},
        optional={"args_json": json_text(st.lists(st.text(max_size=20), max_size=5)) | ARGS, "cwd": CWDS},
    ),
)


def add(name: Any, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def test_add_server_survives_hostile_specs_and_stores_only_usable_ones(target: Target) -> None:
    counts: Counter[str] = Counter()

    @FUZZ
    @given(call=ADD_CALLS)
    # Each of these escaped as an exception or was stored as given before validation.py was fixed.
    @example(call=add("x", command=sys.executable, cwd="\ud800"))
    @example(call=add("x", command=sys.executable, args_json='["\\ud800"]'))
    @example(call=add("x", url="http://[::1]:99999/mcp"))
    @example(call=add("x", url="http://example.com:-1/mcp"))
    @example(call=add("x", url="http://999.1.1.1/mcp"))
    @example(call=add("x", url="http://\u3002/mcp"))
    @example(call=add("x", url="http://[::1]x/mcp"))
    @example(call=add("x", url="http://example.com/\ud800"))
    @example(call=add("x", url="http://user:secret@example.com/mcp"))
    @example(call=add("x", url=0, command=sys.executable))
    @example(call=add("x", url="https://example.com/mcp", args_json=[]))
    @example(call=add("x", command=sys.executable, headers_json={}))
    # Escapes the bridge must refuse, and huge or deep input it must survive.
    @example(call=add("x", command=sys.executable, cwd="to-root"))
    @example(call=add("x", command=sys.executable, cwd="to-etc"))
    @example(call=add("x", command=sys.executable, cwd="loop-a"))
    @example(call=add("x", command="python3"))
    @example(call=add("x", command=WorkspacePath("bin/data.txt")))
    @example(call=add("x", url="https://example.com/mcp", headers_json='{"X-Key": "a\\r\\nX-Evil: 1"}'))
    @example(call=add("x", url="https://example.com/mcp", headers_json="[" * 10_000))
    @example(call=add("x", url="file:///etc/passwd"))
    @example(call=add(PROVISIONED, url="https://example.com/mcp"))
    def check(call: dict[str, Any]) -> None:
        TRIED["mcp_add_server"] += 1
        name = call["name"]
        values = {field: concrete(call.get(field), target.workspace) for field in FIELDS}
        before = target.snapshot()
        reply = classified(target.bridge.add_server(name, **values), frozenset({"invalid_argument"}))
        if reply.is_error:
            check_failed_cleanly(target, before, reply)
            return
        assert isinstance(reply.data, AddResult)
        counts[reply.data.server.transport] += 1
        assert not wrong_type(name, *values.values()), "a wrong-typed argument was taken as absent"
        check_accepted(target, name, reply)
        target.assert_not_dialled()  # adding stores; it never connects

    run(check, "mcp_add_server")
    print(f"  stored and removed again: {dict(counts)}")
    assert counts["http"] >= 5 and counts["stdio"] >= 5, "too few valid specs: the success path went untested"


# -- mcp_remove_server -------------------------------------------------------------------------


def test_remove_server_survives_hostile_names_and_removes_nothing(target: Target) -> None:
    @FUZZ
    @given(name=NAMES.filter(lambda name: name != SEED))
    @example(name=PROVISIONED)
    @example(name="../seed")
    @example(name="seed\n")
    @example(name=["seed"])
    def check(name: Any) -> None:
        TRIED["mcp_remove_server"] += 1
        before = target.snapshot()
        reply = classified(target.bridge.remove_server(name), frozenset({"invalid_argument", "unknown_server", "forbidden"}))
        assert reply.is_error
        if name == PROVISIONED:
            assert reply.data.code == "forbidden"
        elif isinstance(name, str) and NAME_PATTERN.fullmatch(name):
            assert reply.data.code == "unknown_server"
        else:
            assert reply.data.code == "invalid_argument"
        check_failed_cleanly(target, before, reply)

    run(check, "mcp_remove_server")


# -- found by the fuzz outside bridge/validation.py ------------------------------------------------


def test_a_lone_surrogate_in_a_name_is_classified_not_raised(target: Target) -> None:
    classified(target.bridge.call_tool("\ud800", "t", "{}"), frozenset({"invalid_argument"}))


def test_list_tools_with_a_falsy_non_string_server_is_invalid_argument(target: Target) -> None:
    for server in (0, [], False, {}):
        assert classified(target.bridge.list_tools(server)).data.code == "invalid_argument"  # type: ignore[union-attr]
