"""The documentation: the site builds with `mkdocs build --strict`, and every command it shows works.

Each fenced block of the README and of `docs/` is checked by what it holds. A shell line is one of:
the bridge's own command (parsed by the bridge's own parsers, so a renamed option fails here), a
script of this repository that a test or CI runs, a bench script and options it declares, or a
program of someone else's, listed below with the reason it is not run. A `text` block of tool calls
is checked against the tools' input schemas; the layout tree names files that exist; the JSON and
Python snippets are run by the tests named in `SNIPPETS_RUN_ELSEWHERE`. An `mcp-bridge ...` in the
text is a command that parses or the name of one.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from bridge.cli.main import build_parser
from bridge.cli.servers import split_command_line
from bridge.host.main import _parse_args as parse_serve_args
from bridge.models import ServerSpec

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>\w*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)

# Programs that are not ours: what a page shows of them is someone else's interface.
OTHERS_PROGRAMS = {
    "cloudflared": "Cloudflare's tunnel: it dials Cloudflare, and tests dial nothing but loopback",
    "claude": "Claude Code's CLI; the bridge command after its `--` is checked as one of ours",
}

# Scripts of this repository a page tells the reader to run, and what runs them.
SCRIPTS_RUN = {
    "scripts/run.sh": "tests/host/test_stopping.py",
    "scripts/test.sh": ".ci/run",
}

# Snippets run whole by other tests: (page, language) -> the test that runs them.
SNIPPETS_RUN_ELSEWHERE = {
    ("README.md", "json"): "tests/host/test_claude_desktop.py",
    ("hosts.md", "json"): "tests/host/test_claude_desktop.py",
    ("oauth.md", "python"): "tests/host/test_http_face.py",
}


def blocks() -> list[tuple[Path, str, str]]:
    found = []
    for page in PAGES:
        for match in FENCE.finditer(page.read_text()):
            found.append((page, match["lang"], textwrap.dedent(match["body"])))
    return found


def block_id(block: tuple[Path, str, str]) -> str:
    page, lang, body = block
    return f"{page.relative_to(ROOT)}:{lang or 'plain'}:{body.splitlines()[0][:40] if body else ''}"


BLOCKS = blocks()


def test_the_site_builds_with_strict(tmp_path: Path) -> None:
    """No broken link or anchor, no page left out of the nav (mkdocs.yml makes those warnings)."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's notice about its successor
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "sandbox" / "index.html").is_file()


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MkDocs's `toc` both make it (for the headings these pages use)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_fits_a_screenful_of_reading_and_links_only_to_pages_and_headings_that_exist() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for target, anchor in re.findall(r"\]\(((?!https?:)[^)#]+)(?:#([^)]*))?\)", readme):
        assert (ROOT / target).exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / target).read_text(), re.M)
            assert anchor in {slug(heading) for heading in headings}, f"{target}#{anchor}"


def test_every_block_says_what_it_holds() -> None:
    unnamed = [block_id(block) for block in BLOCKS if not block[1]]
    assert not unnamed, "give each fenced block a language (sh, text, json, python)"


def shell_lines(body: str) -> list[list[str]]:
    """Each command of a `sh` block as argv: continuations joined, comments and `VAR=value` prefixes dropped."""
    commands = []
    for line in body.replace("\\\n", " ").splitlines():
        argv = shlex.split(line, comments=True)
        while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
            argv = argv[1:]
        if argv:
            commands.append(argv)
    return commands


def usage_to_argv(argv: list[str]) -> list[str]:
    """A usage line (`[--host chatgpt|claude]`) as one command it stands for: the first choice, brackets dropped."""
    return [token.strip("[]").split("|")[0] for token in argv if token.strip("[]")]


def check_bridge_command(argv: list[str]) -> None:
    argv = usage_to_argv(argv)
    if not argv or argv[0] == "serve" or argv[0].startswith("-"):
        parse_serve_args(argv[1:] if argv[:1] == ["serve"] else argv)
        return
    head, _ = split_command_line(argv)
    build_parser().parse_args(head)


def check_shell(argv: list[str]) -> None:
    program = argv[0]
    if Path(program).name == "mcp-bridge":
        check_bridge_command(argv[1:])
    elif program in SCRIPTS_RUN:
        runner = (ROOT / SCRIPTS_RUN[program]).read_text()
        assert program in runner or Path(program).name in runner, f"{SCRIPTS_RUN[program]} does not run {program}"
    elif Path(program).name == "python" and argv[1].startswith("bench/"):
        source = (ROOT / argv[1]).read_text()
        for option in (token for token in argv[2:] if token.startswith("--")):
            assert f'"{option}"' in source, f"{argv[1]} has no option {option}"
    elif Path(program).name == "python" and argv[1] == "chatgpt_bridge.py":
        check_bridge_command(argv[2:])  # the launcher from oauth.md, run by tests/host/test_http_face.py
    elif program in OTHERS_PROGRAMS:
        if "--" in argv:
            check_shell(argv[argv.index("--") + 1 :])
    else:
        pytest.fail(f"a page shows `{shlex.join(argv)}`, which no test runs or checks")


@pytest.mark.parametrize("block", [b for b in BLOCKS if b[1] == "sh"], ids=block_id)
def test_every_shell_command_shown_parses_or_is_run_by_a_test(block: tuple[Path, str, str]) -> None:
    for argv in shell_lines(block[2]):
        try:
            check_shell(argv)
        except SystemExit:  # argparse refused it (and said why on stderr)
            pytest.fail(f"{block[0].name}: `{shlex.join(argv)}` is not a valid command")


# Inline spans that show a usage form rather than a command.
USAGE_FORMS = {"mcp-bridge COMMAND --help": "every command's help, COMMAND standing for any of them"}


def check_named_command(argv: list[str]) -> None:
    """An inline `mcp-bridge ...`: a whole command that parses, or a command's name (its --help works)."""
    argv = [token for token in argv if token != "..."]
    try:
        check_bridge_command(argv)
    except SystemExit:
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as shown:
            check_bridge_command([*argv, "--help"])
        assert shown.value.code == 0, f"`mcp-bridge {shlex.join(argv)}` names no command"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_bridge_command_named_in_the_text_parses_or_names_a_command(page: Path) -> None:
    text = FENCE.sub("", page.read_text())
    for span in re.findall(r"`((?:\.venv/bin/)?mcp-bridge(?: [^`]*)?)`", text):
        if " ".join(span.split()) not in USAGE_FORMS:
            check_named_command(shlex.split(span)[1:])


def tool_schemas() -> dict[str, dict[str, object]]:
    tools = json.loads((ROOT / "tests" / "host" / "golden" / "tools_standard.json").read_text())
    return {tool["name"]: tool["inputSchema"] for tool in tools}


JSON_ARGUMENTS = {"arguments_json": dict, "headers_json": dict, "args_json": list, "env_json": dict}


def check_tool_call(line: str, schemas: dict[str, dict[str, object]]) -> None:
    call = ast.parse(line.split(" -> ")[0].strip(), mode="eval").body
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name), line
    name = call.func.id
    assert name in schemas, f"{name} is not one of the four tools"
    known = set(schemas[name]["properties"])
    for keyword in call.keywords:
        assert keyword.arg in known, f"{name} has no argument {keyword.arg}"
        value = ast.literal_eval(keyword.value)
        if keyword.arg in JSON_ARGUMENTS:
            assert isinstance(json.loads(value), JSON_ARGUMENTS[keyword.arg]), line


def check_tree(body: str) -> None:
    """The layout tree: each name at the top level, or one level into a folder, exists."""
    folder = ""
    for line in body.splitlines():
        name = line.split()[0] if line.strip() else ""
        if not line.startswith(" "):
            folder = name if name.endswith("/") else ""
            assert (ROOT / name).exists(), name
        elif folder and re.match(r"^  \S", line):
            assert (ROOT / folder / name).exists(), folder + name


@pytest.mark.parametrize("block", [b for b in BLOCKS if b[1] == "text"], ids=block_id)
def test_every_tool_call_shown_matches_the_tools_and_every_file_named_exists(block: tuple[Path, str, str]) -> None:
    lines = [line for line in block[2].splitlines() if line.strip()]
    if all(re.match(r"mcp_\w+\(", line) for line in lines):
        schemas = tool_schemas()
        for line in lines:
            check_tool_call(line, schemas)
    else:
        check_tree(block[2])


@pytest.mark.parametrize("block", [b for b in BLOCKS if b[1] in ("json", "python")], ids=block_id)
def test_every_config_snippet_is_checked(block: tuple[Path, str, str]) -> None:
    page, lang, body = block
    if (page.name, lang) in SNIPPETS_RUN_ELSEWHERE:
        runner = (ROOT / SNIPPETS_RUN_ELSEWHERE[(page.name, lang)]).read_text()
        assert page.name in runner, f"{SNIPPETS_RUN_ELSEWHERE[(page.name, lang)]} does not read {page.name}"
        return
    namespace: dict[str, object] = {}
    exec(compile(body, str(page), "exec"), namespace)  # noqa: S102 - our own page's example config
    servers = namespace.get("MCP_SERVERS")
    assert isinstance(servers, dict), f"a python block of {page.name} that is no MCP_SERVERS example"
    adapter = TypeAdapter(ServerSpec)
    for spec in servers.values():
        adapter.validate_python(spec)
