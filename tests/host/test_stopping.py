"""Starting and stopping a real bridge the way a person does: `scripts/run.sh` in a terminal, then
Ctrl-C or SIGTERM, or the host closing stdin."""

from __future__ import annotations

import subprocess

from bridge_proc import FOUR_TOOLS, ROOT, StdioPeer, host_env, workdirs


def test_run_sh_serves_stdio_and_ends_with_0_when_the_host_closes_stdin() -> None:
    with workdirs() as dirs:
        proc = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "run.sh")],
            env=host_env(dirs),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        peer = StdioPeer(proc)
        peer.handshake()
        tools = peer.result("tools/list")["tools"]
        proc.stdin.close()  # type: ignore[union-attr]
        assert proc.wait(timeout=60) == 0
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
    assert [tool["name"] for tool in tools] == FOUR_TOOLS
