"""The SBPL profile, checked structurally on Linux (a real Mac runs scripts/macos_sandbox_smoke.py).

Golden files: UPDATE_GOLDEN=1 rewrites tests/sandbox/golden/*; review the diff.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox.limits import Limits
from sandbox.policy import Mask, Policy
from sandbox.seatbelt import LIMITS_GUARD, SANDBOX_EXEC, profile_and_params, sandbox_exec_argv

GOLDEN = Path(__file__).with_name("golden")
TMP = Path("/private/tmp/mcp-child-abc")
PORT = 49152
HOSTILE = [
    'a"b', "x)(allow default)(", "new\nline", "back\\slash", "with space", "semi;colon",
    '#"raw"', "(param \"WORKSPACE\")", "caf\u00e9", "not-utf8-\udcff",
]  # fmt: skip


def policy(base: str = "/Users/alice", *, network: str = "deny", roots: int = 1) -> Policy:
    home = Path(base)
    ws = home / "code" / "proj"
    return Policy(
        workspace=ws,
        write_roots=tuple(home / f"cache{i}" for i in range(roots)),
        masks=(Mask(home / ".ssh", "dir"), Mask(home / ".netrc", "absent"), Mask(ws / "work", "dir")),
        protected=(ws / ".git",),
        pinned=(ws / "sub",),
        network=network,  # type: ignore[arg-type]
        home=Path("/Users/Shared/mcp-homes") / home.name / "srv",
        hidden=(home, Path("/Users/Shared/mcp-homes") / home.name),
        exposed=(home / ".nvm",),
    )


def forms(profile: str) -> list[object]:
    """Parse SBPL into nested lists; strings come back as ("str", text). Fails on imbalance."""
    tokens = re.finditer(r'\s+|;[^\n]*|#"[^"]*"|"(?:[^"\\]|\\.)*"|\(|\)|[^\s()";]+', profile)
    stack: list[list[object]] = [[]]
    position = 0
    for token in tokens:
        assert token.start() == position, f"unlexable text at {profile[position : position + 20]!r}"
        position = token.end()
        text = token.group()
        if text.isspace() or text.startswith(";"):
            continue
        if text == "(":
            stack.append([])
        elif text == ")":
            assert len(stack) > 1, "unbalanced ')'"
            done = stack.pop()
            stack[-1].append(done)
        elif text.startswith(('"', '#"')):
            assert len(text.encode()) < 1025, "string literal too long for SBPL"
            stack[-1].append(("str", text))
        else:
            stack[-1].append(text)
    assert position == len(profile), "unterminated literal"
    assert len(stack) == 1, "unbalanced '('"
    return stack[0]


def params_used(profile: str) -> set[str]:
    return set(re.findall(r'\(param "([^"]*)"\)', profile))


@pytest.mark.parametrize("hostile", HOSTILE)
def test_profile_is_identical_for_benign_and_hostile_paths(hostile: str) -> None:
    benign, _ = profile_and_params(policy(), tmpdir=TMP)
    evil, params = profile_and_params(policy(f"/Users/{hostile}"), tmpdir=Path(f"/private/tmp/{hostile}"))
    assert evil == benign
    assert any(hostile in value for value in params.values())


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="\x00/"), min_size=1, max_size=40))
def test_profile_never_depends_on_path_text(name: str) -> None:
    benign, _ = profile_and_params(policy(), tmpdir=TMP)
    assert profile_and_params(policy(f"/Users/{name}"), tmpdir=TMP)[0] == benign


def test_hostile_paths_appear_only_in_d_arguments() -> None:
    argv = sandbox_exec_argv(policy("/Users/x)(allow default)("), ["/usr/bin/python3"], tmpdir=TMP)
    assert "(allow default)" not in argv[2]
    carriers = [arg for arg in argv if "x)(allow default)(" in arg]
    assert carriers and all(arg.startswith("-D") for arg in carriers)


@pytest.mark.parametrize("network", ["deny", "allow", "proxy"])
def test_params_used_equal_params_passed(network: str) -> None:
    profile, params = profile_and_params(policy(network=network, roots=2), tmpdir=TMP, proxy_port=PORT)
    assert params_used(profile) == set(params)


def test_param_keys_are_plain_identifiers() -> None:
    _, params = profile_and_params(policy(roots=3), tmpdir=TMP)
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", key) for key in params)


@pytest.mark.parametrize("network", ["deny", "allow", "proxy"])
def test_profile_is_balanced_and_starts_closed(network: str) -> None:
    parsed = forms(profile_and_params(policy(network=network), tmpdir=TMP, proxy_port=PORT)[0])
    assert parsed[:2] == [["version", "1"], ["deny", "default"]]


@pytest.mark.parametrize("network", ["deny", "allow", "proxy"])
def test_profile_never_opens_everything(network: str) -> None:
    profile = profile_and_params(policy(network=network), tmpdir=TMP, proxy_port=PORT)[0]
    for forbidden in ("(allow default)", "(with no-sandbox)", "(allow network*", "(allow network-outbound)"):
        assert forbidden not in profile


def test_profile_has_no_network_rules_when_network_is_denied() -> None:
    assert "network" not in profile_and_params(policy(), tmpdir=TMP)[0]


def test_profile_allows_outbound_ip_when_network_is_allowed() -> None:
    assert (
        '(allow network-outbound (remote ip "*:*"))'
        in profile_and_params(policy(network="allow"), tmpdir=TMP)[0]
    )


def test_a_proxied_child_may_connect_to_the_proxy_port_and_nowhere_else() -> None:
    """No DNS, no other port, no Unix socket: the only network rule is the proxy's address."""
    profile, params = profile_and_params(policy(network="proxy"), tmpdir=TMP, proxy_port=PORT)
    rules = [form for form in forms(profile) if isinstance(form, list) and any("network" in str(p) for p in form)]
    assert rules == [["allow", "network-outbound", ["remote", "ip", ["param", ("str", '"PROXY"')]]]]
    assert params["PROXY"] == f"localhost:{PORT}"
    for absent in ("mDNSResponder", "SystemConfiguration", "trustd", '"*:*"', "unix-socket"):
        assert absent not in profile


def test_the_proxy_port_is_a_parameter_not_profile_text() -> None:
    low = profile_and_params(policy(network="proxy"), tmpdir=TMP, proxy_port=1)
    high = profile_and_params(policy(network="proxy"), tmpdir=TMP, proxy_port=65535)
    assert low[0] == high[0] and (low[1]["PROXY"], high[1]["PROXY"]) == ("localhost:1", "localhost:65535")


@pytest.mark.parametrize("port", [None, 0, 65536, -1, True, "8080", "1) (allow default"])
def test_a_proxy_network_refuses_anything_but_a_port_number(port: object) -> None:
    with pytest.raises(ValueError, match="loopback port"):
        profile_and_params(policy(network="proxy"), tmpdir=TMP, proxy_port=port)  # type: ignore[arg-type]


def test_every_write_allow_and_every_deny_has_a_filter() -> None:
    """A rule without a filter matches everything: an unfiltered write allow would open the disk."""
    empty = Policy(workspace=Path("/Users/a/ws"))
    for parsed in (forms(profile_and_params(p, tmpdir=TMP)[0]) for p in (empty, policy())):
        for form in parsed:
            assert isinstance(form, list)
            if (form[0] == "deny" and form[1] != "default") or (form[0] == "allow" and "file-write*" in form):
                assert any(isinstance(part, list) for part in form[1:]), form


def test_secret_denies_come_after_the_write_allow() -> None:
    profile = profile_and_params(policy(), tmpdir=TMP)[0]
    assert (
        profile.index("(allow file-write*")
        < profile.index("(deny file-write*")
        < profile.index("(deny file-read* file-write*")
    )


def test_hidden_trees_are_denied_before_exposed_trees_are_shown_again() -> None:
    profile = profile_and_params(policy(), tmpdir=TMP)[0]
    hide = profile.index('(deny file-read*\n  (subpath (param "HIDE_0"))')
    assert hide < profile.index('(allow file-read*\n  (subpath (param "EXPOSE_0"))') < profile.index("(allow file-write*")


def test_guarded_paths_are_denied_in_every_writable_root_but_the_home() -> None:
    profile = profile_and_params(policy(roots=2), tmpdir=TMP)[0]
    guarded = profile[profile.index("(deny file-write*"):]
    guarded = guarded[:guarded.index("\n\n")]
    for key in ("WORKSPACE", "WRITE_0", "WRITE_1"):
        assert f'(regex-quote (param "{key}")) #"/(.*/)?' in guarded
    assert '(param "HOME")' not in guarded


def test_argv_shape() -> None:
    argv = sandbox_exec_argv(policy(), ["/usr/bin/python3", "-I", "srv.py"], tmpdir=TMP)
    assert argv[:2] == [SANDBOX_EXEC, "-p"]
    assert argv[-4:] == ["--", "/usr/bin/python3", "-I", "srv.py"]
    assert all(arg.startswith("-D") for arg in argv[3:-4])


@pytest.mark.parametrize(
    "name, subject",
    [
        ("workspace_only_network_deny", Policy(workspace=Path("/Users/alice/code/proj"))),
        ("masks_pins_network_deny", policy()),
        ("capability_roots_network_allow", policy(network="allow", roots=2)),
        ("private_home_proxy_network", policy(network="proxy")),
    ],
)
def test_golden(name: str, subject: Policy) -> None:
    argv = sandbox_exec_argv(subject, ["/usr/local/bin/server", "--stdio"], tmpdir=TMP, proxy_port=PORT)
    rendered = {
        GOLDEN / f"{name}.sb": argv[2],
        GOLDEN / f"{name}.argv": "\n".join([*argv[:2], "PROFILE", *argv[3:]]) + "\n",
    }
    for path, text in rendered.items():
        if os.environ.get("UPDATE_GOLDEN") == "1":
            path.write_text(text)
        assert path.read_text() == text, f"{path.name} changed; rerun with UPDATE_GOLDEN=1 and review"


def test_golden_limits_prelude() -> None:
    """The whole argv with the default limits: the prelude, then sandbox-exec (the helper's path and
    the profile are placeholders here, the profile being the workspace_only one)."""
    subject = Policy(workspace=Path("/Users/alice/code/proj"))
    argv = sandbox_exec_argv(subject, ["/usr/local/bin/server"], tmpdir=TMP, limits=Limits(), python="/opt/py/bin/python3")
    profile_at = argv.index(SANDBOX_EXEC) + 2
    assert argv[profile_at] == (GOLDEN / "workspace_only_network_deny.sb").read_text()
    shown = [*argv[:profile_at], "PROFILE", *argv[profile_at + 1 :]]
    text = "\n".join(arg.replace(str(LIMITS_GUARD), "LIMITS_GUARD") for arg in shown) + "\n"
    path = GOLDEN / "limits_prelude.argv"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert path.read_text() == text, f"{path.name} changed; rerun with UPDATE_GOLDEN=1 and review"


def test_the_limits_prelude_needs_an_interpreter_only_when_it_bounds_something() -> None:
    subject = Policy(workspace=Path("/Users/alice/code/proj"))
    with pytest.raises(ValueError, match="interpreter"):
        sandbox_exec_argv(subject, ["/bin/true"], tmpdir=TMP, limits=Limits())
    unbounded = Limits(memory_bytes=None, processes=None, file_bytes=None, open_files=None)
    assert sandbox_exec_argv(subject, ["/bin/true"], tmpdir=TMP, limits=unbounded)[0] == SANDBOX_EXEC


def test_the_bridges_own_code_in_a_writable_root_is_denied_writes_after_the_write_allow() -> None:
    """Rendered only (no Mac here): the checkout inside the workspace is a write deny, by parameter."""
    own = Path("/Users/alice/ws/mcp-bridge")
    profile, params = profile_and_params(replace(policy(), own=(own,)), tmpdir=TMP)
    assert params["OWN_0"] == str(own)
    deny = '(deny file-write*\n  (subpath (param "OWN_0")))'
    assert profile.index("(allow file-write*") < profile.index(deny)
    assert "OWN_" not in profile_and_params(policy(), tmpdir=TMP)[0]  # none: no rule at all
