"""What a new user gets wrong is said at start, once, on stderr; nothing here is a traceback.

Each test starts the real `mcp-bridge` process as a host does and reads what it says."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bridge_proc import BRIDGE, StdioPeer, host_env

import bridge


def start(env: dict[str, str], *args: str, cwd: str | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [BRIDGE, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd
    )


def finish(proc: subprocess.Popen[bytes]) -> str:
    """Close stdin (the host goes away) and return everything the bridge wrote to stderr."""
    _, err = proc.communicate(timeout=60)
    return err.decode()


def tool_call(peer: StdioPeer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return peer.result("tools/call", {"name": name, "arguments": arguments})


def test_an_unset_workspace_with_working_directory_root_is_said_at_start_and_in_every_stdio_error(
    dirs: dict[str, str],
) -> None:
    env = host_env({"MCP_STATE_DIR": dirs["MCP_STATE_DIR"]})  # as Claude Desktop starts us: no MCP_WORKSPACE, cwd /
    proc = start(env, cwd="/")
    peer = StdioPeer(proc)
    peer.handshake()
    added = tool_call(peer, "mcp_add_server", {"name": "echo", "command": sys.executable, "args_json": "[]", "cwd": "/"})
    listed = tool_call(peer, "mcp_list_tools", {"server": "echo"}) if not added["isError"] else added
    err = finish(proc)
    assert "MCP_WORKSPACE is the filesystem root / (it is unset and the working directory is /)" in err
    assert listed["isError"] and "MCP_WORKSPACE" in listed["content"][0]["text"]


def test_started_in_its_checkout_without_a_workspace_the_bridge_refuses_stdio_naming_mcp_workspace(
    dirs: dict[str, str],
) -> None:
    """The old default (issue 27): the workspace was the checkout, and a child rewrote the bridge."""
    checkout = Path(bridge.__file__).resolve().parents[1]
    env = host_env({k: v for k, v in dirs.items() if k != "MCP_WORKSPACE"})
    proc = start(env, cwd=str(checkout))
    peer = StdioPeer(proc)
    peer.handshake()
    added = tool_call(peer, "mcp_add_server", {"name": "echo", "command": sys.executable, "args_json": "[]"})
    listed = tool_call(peer, "mcp_list_tools", {"server": "echo"}) if not added["isError"] else added
    err = finish(proc)
    assert f"MCP_WORKSPACE {checkout} (it is unset, so the working directory) lies inside the bridge's own" in err
    assert listed["isError"] and "MCP_WORKSPACE" in listed["content"][0]["text"]  # refused before any spawn


def test_http_servers_still_work_with_an_unusable_workspace(dirs: dict[str, str]) -> None:
    proc = start(host_env({**dirs, "MCP_WORKSPACE": "/"}))
    peer = StdioPeer(proc)
    peer.handshake()
    listed = tool_call(peer, "mcp_list_tools", {})
    finish(proc)
    assert not listed["isError"]


@pytest.mark.parametrize("where", ["home", "missing"])
def test_a_workspace_at_home_or_missing_is_said_at_start_naming_the_setting(dirs: dict[str, str], where: str) -> None:
    home = Path(dirs["MCP_STATE_DIR"]).parent / "home"
    home.mkdir()
    workspace = str(home) if where == "home" else str(home / "no-such-folder")
    err = finish(start({**host_env(dirs), "HOME": str(home), "MCP_WORKSPACE": workspace}))
    expected = "is the home folder" if where == "home" else "which is not an existing directory"
    assert f"MCP_WORKSPACE {expected}" in err or f"MCP_WORKSPACE names {workspace}, {expected}" in err


def test_a_usable_workspace_gets_no_warning(dirs: dict[str, str]) -> None:
    assert "MCP_WORKSPACE" not in finish(start(host_env(dirs)))


def test_a_misspelt_setting_is_warned_about_with_the_close_match(dirs: dict[str, str]) -> None:
    err = finish(start(host_env(dirs, MCP_TIMOUT="5")))
    assert "MCP_TIMOUT is not a setting of the bridge; did you mean MCP_TIMEOUT?" in err


def test_a_port_in_use_is_one_line_exit_2_and_no_traceback(dirs: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        ran = subprocess.run(
            [BRIDGE, "--transport", "http", "--port", str(port)], env=host_env(dirs), capture_output=True, text=True, timeout=60
        )
    assert ran.returncode == 2
    assert f"mcp-bridge: cannot listen on 127.0.0.1:{port}: Address already in use" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_a_port_out_of_range_is_one_line_exit_2(dirs: dict[str, str]) -> None:
    ran = subprocess.run(
        [BRIDGE, "--transport", "http", "--port", "70000"], env=host_env(dirs), capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert "mcp-bridge: --port 70000 is out of range (0-65535)" in ran.stderr


def test_server_info_names_the_bridge_and_its_own_version(dirs: dict[str, str]) -> None:
    proc = start(host_env(dirs))
    info = StdioPeer(proc).handshake()["serverInfo"]
    finish(proc)
    assert info == {"name": "mcp-bridge", "version": bridge.__version__} | {k: v for k, v in info.items() if k not in ("name", "version")}
    assert bridge.__version__ != "0+unknown"


def config_file(dirs: dict[str, str], servers: dict[str, Any]) -> str:
    path = Path(dirs["MCP_STATE_DIR"]).parent / "config.py"
    path.write_text(f"MCP_SERVERS = {servers!r}\n")
    return str(path)


@pytest.mark.parametrize(
    ("command", "said"),
    [("no-such-mcp-program", "command 'no-such-mcp-program' is not on PATH"), ("/no/such/server", "is not an executable file")],
    ids=["bare-not-on-path", "missing-absolute"],
)
def test_a_developer_entry_whose_command_cannot_run_stops_the_start_naming_it(
    dirs: dict[str, str], command: str, said: str
) -> None:
    config = config_file(dirs, {"tools": {"transport": "stdio", "command": command}})
    ran = subprocess.run([BRIDGE], env=host_env(dirs, MCP_CONFIG=config), capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2
    assert "MCP_SERVERS['tools']" in ran.stderr and said in ran.stderr


def test_a_developer_entry_with_a_bare_command_on_path_is_resolved_and_served(dirs: dict[str, str]) -> None:
    bin_dir = Path(dirs["MCP_STATE_DIR"]).parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "my-python").symlink_to(sys.executable)
    config = config_file(dirs, {"py": {"transport": "stdio", "command": "my-python"}})
    env = host_env(dirs, MCP_CONFIG=config)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    proc = start(env)
    peer = StdioPeer(proc)
    peer.handshake()
    listed = tool_call(peer, "mcp_list_tools", {})
    finish(proc)
    assert f"{bin_dir}/my-python" in json.dumps(listed["structuredContent"])


def test_arguments_given_as_an_object_are_taken_as_that_object(dirs: dict[str, str]) -> None:
    proc = start(host_env(dirs))
    peer = StdioPeer(proc)
    peer.handshake()
    tool_call(peer, "mcp_add_server", {"name": "closed", "url": "http://127.0.0.1:9/mcp"})  # nothing listens
    given = tool_call(peer, "mcp_call_tool", {"server": "closed", "tool_name": "t", "arguments_json": {"a": 1}})
    empty = tool_call(peer, "mcp_call_tool", {"server": "closed", "tool_name": "t", "arguments_json": ""})
    finish(proc)
    assert given["structuredContent"]["code"] == "connect_failed"  # the object passed validation and was sent
    assert empty["structuredContent"]["code"] == "invalid_argument"
    assert "arguments_json is empty" in empty["structuredContent"]["message"]


def test_a_stdio_bridge_serves_without_importing_the_http_face_the_oauth_server_or_griffe_and_freezes_the_rest(
    dirs: dict[str, str], tmp_path: Path
) -> None:
    """Start-up is measured against a bare FastMCP server: importing what serving stdio does not
    need (httpx and its CLI's rich, the OAuth server, griffe for docstrings) cost ~70 ms. What it
    does import is frozen out of the garbage collector's way once serving starts."""
    listing = tmp_path / "modules.json"
    launcher = (
        "import atexit, json, sys\n"
        "import gc\n"
        f"atexit.register(lambda: open({str(listing)!r}, 'w').write(json.dumps([gc.get_freeze_count(), sorted(sys.modules)])))\n"
        "from bridge.cli.main import main\n"
        "sys.exit(main())\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", launcher], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=host_env(dirs),
    )  # fmt: skip
    peer = StdioPeer(proc)
    peer.handshake()
    assert {tool["name"] for tool in peer.result("tools/list")["tools"]} >= {"mcp_call_tool"}
    finish(proc)
    frozen, modules = json.loads(listing.read_text())
    assert frozen > 100_000  # start-up's objects, out of every later collection's way
    imported = set(modules)
    assert "bridge.host.stdio" in imported and "bridge.host.calls" in imported
    for unneeded in ("griffe", "httpx", "bridge.host.http", "bridge.host.auth", "bridge.host.oauth", "bridge.cli.servers"):
        assert unneeded not in imported, unneeded
