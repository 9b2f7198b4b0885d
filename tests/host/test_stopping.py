"""Starting and stopping a real bridge the way a person does: `scripts/run.sh` in a terminal, then
Ctrl-C; a service manager's SIGTERM; a host closing stdin. Each says what it serves, where the
workspace and state are and how to stop, and a stop is clean: exit 0, no traceback."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import termios
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from bridge_proc import FOUR_TOOLS, ROOT, StdioPeer, host_env, http_bridge, workdirs

RUN_SH = ["bash", str(ROOT / "scripts" / "run.sh")]


def test_run_sh_serves_stdio_says_where_and_ends_with_0_when_the_host_closes_stdin() -> None:
    with workdirs() as dirs:
        proc = subprocess.Popen(RUN_SH, env=host_env(dirs), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        peer = StdioPeer(proc)
        peer.handshake()
        tools = peer.result("tools/list")["tools"]
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=60) == 0
        proc.stdout.close()  # type: ignore[union-attr]
        stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert [tool["name"] for tool in tools] == FOUR_TOOLS
    assert "serving MCP over stdio" in stderr
    assert f"workspace: {dirs['MCP_WORKSPACE']}; state: {dirs['MCP_STATE_DIR']}" in stderr
    assert stderr.count(dirs["MCP_WORKSPACE"]) == 1  # said once, by the bridge, not again by run.sh
    assert "stop with Ctrl-C" in stderr


def _own_terminal() -> None:
    """In the child: a new session whose controlling terminal is its stdin, Ctrl-C as it is at a shell."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@contextmanager
def in_a_terminal(command: list[str], env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`command` run with a pseudo-terminal as its stdin, stdout and stderr; yields it and the terminal's other end."""
    terminal, tty = os.openpty()
    proc = subprocess.Popen(command, env=env, stdin=tty, stdout=tty, stderr=tty, start_new_session=True, preexec_fn=_own_terminal)
    os.close(tty)
    try:
        yield proc, terminal
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        os.close(terminal)


def read_until(terminal: int, text: str | None, timeout: float = 120) -> str:
    """What the terminal shows until `text` appears (or, for None, until the program closes it)."""
    shown = b""
    while text is None or text.encode() not in shown:
        ready, _, _ = select.select([terminal], [], [], timeout)
        assert ready, f"the terminal showed no {text!r} within {timeout} s:\n{shown.decode(errors='replace')}"
        try:
            chunk = os.read(terminal, 65536)
        except OSError:  # EIO: every program holding the terminal has ended
            chunk = b""
        if not chunk:
            assert text is None, f"the terminal closed before showing {text!r}:\n{shown.decode(errors='replace')}"
            break
        shown += chunk
    return shown.decode(errors="replace")


def test_run_sh_in_a_terminal_says_what_it_serves_and_ctrl_c_ends_it_with_0_and_no_traceback() -> None:
    with workdirs() as dirs, in_a_terminal(RUN_SH, host_env(dirs)) as (proc, terminal):
        started = read_until(terminal, "stop with Ctrl-C")
        os.write(terminal, b"\x03")  # Ctrl-C, typed: the terminal sends SIGINT to the bridge
        stopped = read_until(terminal, None)
        code = proc.wait(timeout=60)
    assert "serving MCP over stdio" in started
    assert f"workspace: {dirs['MCP_WORKSPACE']}; state: {dirs['MCP_STATE_DIR']}" in started
    assert "SIGINT: stopping" in stopped and "stopped" in stopped
    assert "Traceback" not in started + stopped
    assert code == 0


def test_sigterm_ends_an_http_bridge_with_0_and_no_traceback_after_saying_where_it_serves() -> None:
    with workdirs() as dirs, http_bridge(host_env(dirs)) as served:
        served.wait_for_line("stop with Ctrl-C")
        served.proc.send_signal(signal.SIGTERM)
        code = served.proc.wait(timeout=60)
        served.wait_for_line(r"mcp_bridge INFO stopped$")
    assert code == 0
    assert f"workspace: {dirs['MCP_WORKSPACE']}; state: {dirs['MCP_STATE_DIR']}" in served.stderr
    assert "Traceback" not in served.stderr and "CancelledError" not in served.stderr


def test_a_421_names_the_refused_host_and_the_setting_that_serves_it() -> None:
    with workdirs() as dirs, http_bridge(host_env(dirs)) as served:
        refused = httpx.post(served.url, headers={"Host": "new-name.trycloudflare.com"}, json={}, timeout=30)
        line = served.wait_for_line(r"refused Host .*")
    assert refused.status_code == 421
    assert "'new-name.trycloudflare.com'" in line.group(0) and "MCP_ALLOWED_HOSTS" in line.group(0)


def test_dependencies_log_from_warning_unless_the_log_level_is_debug() -> None:
    with workdirs() as dirs:
        with http_bridge(host_env(dirs)) as quiet:
            quiet.proc.send_signal(signal.SIGTERM)
            quiet.proc.wait(timeout=60)
            quiet.wait_for_line(r"mcp_bridge INFO stopped$")
        with http_bridge(host_env(dirs, MCP_LOG_LEVEL="DEBUG")) as chatty:
            chatty.wait_for_line(r"StreamableHTTP session manager started")
    assert "mcp_bridge INFO serving Streamable HTTP" in quiet.stderr
    assert "session manager" not in quiet.stderr and "Started server process" not in quiet.stderr
    assert "Started server process" in chatty.stderr
