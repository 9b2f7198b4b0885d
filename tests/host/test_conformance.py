"""The official conformance suite (`@modelcontextprotocol/conformance`, installed in tests/node) against the real bridge.

- Client scenarios: the suite starts a test server per scenario and runs `tests/conformance_client.py`
  with its URL; that host provisions the URL in the bridge's config, starts the bridge over stdio and
  lists and calls the server's tools through it, signing in as a browser would. So every scenario
  runs through the bridge's downstream client: discovery, registration, sign-in, step-up, and the
  operator-set clients (secret by reference, client credentials).
- Server scenarios: those that apply to a meta-server (its own four tools; the others call tools,
  resources and prompts of the suite's reference server), against one bridge in HTTP mode.

`tests/conformance-expected-failures.yml` lists what may fail; the suite fails a run both for an
unexpected failure and for a listed scenario that passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from bridge_proc import NODE_MODULES, ROOT, HttpBridge, host_env, http_bridge, workdirs

NODE22 = NODE_MODULES / "node/bin/node"
CONFORMANCE = NODE_MODULES / "@modelcontextprotocol/conformance/dist/index.js"
CLIENT = ROOT / "tests/conformance_client.py"
EXPECTED_FAILURES = ROOT / "tests/conformance-expected-failures.yml"
EXPECTED = {"auth/cross-app-access-complete-flow"}  # what the file lists (the suite reads the file)

CLIENT_SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]
# Of the 32 server scenarios, those a meta-server can take: the rest need the reference server's tools.
SERVER_SCENARIOS = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]


@pytest.fixture(scope="module")
def node_home() -> Iterator[dict[str, str]]:
    for tool in (NODE22, CONFORMANCE):
        assert tool.is_file(), f"{tool} is missing: run scripts/test.sh, which installs tests/node"
    with workdirs() as made:
        yield {"PATH": "/usr/bin:/bin", "HOME": made["MCP_STATE_DIR"] + "-node-home"}


def conformance(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(NODE22), str(CONFORMANCE), *args, "--expected-failures", str(EXPECTED_FAILURES)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


# Warnings the suite itself calls acceptable: a reconnection after an SSE stream closed that comes
# more than 200 ms after the server's `retry` ("may indicate network delays"), as on a loaded machine.
TOLERATED_WARNINGS = {"client-sse-retry-timing"}


def failures(out: Path) -> list[str]:
    """What failed or warned, from the suite's own record, but the tolerated warnings."""
    found = []
    for path in out.glob("**/checks.json"):
        for check in json.loads(path.read_text()):
            tolerated = check["status"] == "WARNING" and check["id"] in TOLERATED_WARNINGS
            if check["status"] in ("FAILURE", "WARNING") and not tolerated:
                found.append(f"{check['id']}: {check.get('errorMessage') or check.get('description')}")
    return found


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_client_scenario_through_the_bridge(node_home: dict[str, str], scenario: str, tmp_path: Path) -> None:
    # The client command is split on spaces by the suite: the interpreter and the script, no more.
    command = f"{sys.executable} {CLIENT}"
    out = str(tmp_path)
    done = conformance(node_home, "client", "--command", command, "--scenario", scenario, "--timeout", "120000", "-o", out)
    failed = failures(tmp_path)
    assert done.returncode == 0 or (scenario not in EXPECTED and not failed), "\n".join([*failed, done.stdout[-4000:]])


@pytest.fixture(scope="module")
def open_bridge() -> Iterator[HttpBridge]:
    """The suite cannot send a token: it meets the loopback-only, no-auth mode. Each scenario opens
    sessions it never closes: the least recently used idle one makes room."""
    with workdirs() as dirs, http_bridge(host_env(dirs)) as running:
        yield running


@pytest.mark.parametrize("scenario", SERVER_SCENARIOS)
def test_server_scenario_against_http_mode(
    node_home: dict[str, str], open_bridge: HttpBridge, scenario: str, tmp_path: Path
) -> None:
    done = conformance(node_home, "server", "--url", open_bridge.url, "--scenario", scenario, "-o", str(tmp_path))
    assert done.returncode == 0, "\n".join([*failures(tmp_path), done.stdout[-4000:], done.stderr[-4000:]])
