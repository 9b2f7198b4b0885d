"""Never an open face: what a real bridge process serves without credentials, what it refuses to
start with, the accounts a launcher's OAuth proxy lets in, sessions per client, and no
configuration from the working directory. Every request goes to 127.0.0.1; tunnels are played by
the headers they send.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from bridge_proc import (
    BRIDGE,
    HttpBridge,
    host_env,
    http_bridge,
    post_initialize,
)
from fastmcp.server.auth.providers.jwt import RSAKeyPair

TOKEN = "test-token-" + "7f3a9c2e5b1d4068"


def refused_start(env: dict[str, str], *args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [BRIDGE, "--transport", "http", "--port", "0", *args], env=env, capture_output=True, text=True, timeout=60, cwd=cwd
    )
    assert done.returncode == 2, done.stderr
    return done


# --- 1. without credentials, this machine only -----------------------------------------------


@pytest.fixture
def open_bridge(dirs: dict[str, str]) -> Iterator[HttpBridge]:
    with http_bridge(host_env(dirs)) as running:
        yield running


def test_a_loopback_client_is_served_without_credentials(open_bridge: HttpBridge) -> None:
    assert post_initialize(open_bridge.url).status_code == 200
    assert "served without credentials: requests whose Host is a loopback name and that carry no forwarding" in (
        open_bridge.stderr
    )


@pytest.mark.parametrize(
    "header",
    ["X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded", "CF-Connecting-IP", "X-Real-IP",
     "True-Client-IP", "Via"],
)
def test_a_request_relayed_by_a_tunnel_that_rewrites_host_is_refused(open_bridge: HttpBridge, header: str) -> None:
    port = open_bridge.url.split(":")[2].split("/")[0]
    refused = post_initialize(open_bridge.url, **{header: "203.0.113.7", "Host": f"localhost:{port}"})
    assert refused.status_code == 403 and "MCP_AUTH" in refused.text


def test_a_non_loopback_allowed_host_without_authentication_refuses_to_start(dirs: dict[str, str]) -> None:
    done = refused_start(host_env(dirs, MCP_AUTH="none", MCP_ALLOWED_HOSTS="bridge.example"))
    assert "MCP_ALLOWED_HOSTS names bridge.example" in done.stderr and "MCP_AUTH" in done.stderr


def test_a_public_bind_without_authentication_refuses_to_start(dirs: dict[str, str]) -> None:
    done = refused_start(host_env(dirs), "--host", "0.0.0.0")
    assert "MCP_PUBLIC_URL" in done.stderr


def test_a_wildcard_tunnel_name_needs_the_public_url(dirs: dict[str, str]) -> None:
    done = refused_start(host_env(dirs, MCP_ALLOWED_HOSTS="*.trycloudflare.com"))
    assert "MCP_PUBLIC_URL" in done.stderr


# --- 2. the tunnel host gets OAuth by default; a stranger gets 401 ----------------------------


@pytest.fixture
def tunnelled(dirs: dict[str, str]) -> Iterator[HttpBridge]:
    with http_bridge(host_env(dirs, MCP_ALLOWED_HOSTS="bridge.example")) as running:
        yield running


def test_a_stranger_through_the_tunnel_gets_401_pointing_at_the_oauth_metadata(tunnelled: HttpBridge) -> None:
    challenge = post_initialize(tunnelled.url, Host="bridge.example", **{"X-Forwarded-For": "203.0.113.7"})
    assert challenge.status_code == 401
    metadata = 'resource_metadata="https://bridge.example/.well-known/oauth-protected-resource/mcp"'
    assert metadata in challenge.headers["www-authenticate"]
    assert post_initialize(tunnelled.url).status_code == 401  # loopback is no exception once OAuth is on
    assert "issuer https://bridge.example" in tunnelled.stderr


def test_the_oauth_endpoints_are_served_through_the_tunnel_host(tunnelled: HttpBridge) -> None:
    base = tunnelled.url.removesuffix("/mcp")
    tunnel = {"Host": "bridge.example"}
    server = httpx.get(f"{base}/.well-known/oauth-authorization-server", headers=tunnel, trust_env=False, timeout=30)
    assert server.status_code == 200 and server.json()["issuer"] == "https://bridge.example/"
    # The consent page posts from the tunnel's https origin: the Origin guard lets it through.
    consent = httpx.post(f"{base}/oauth/consent", data={"request": "unknown", "code": "x"}, trust_env=False, timeout=30,
                         headers={**tunnel, "Origin": "https://bridge.example"})
    assert consent.status_code == 404  # reached the consent step, which does not know that request
    foreign = httpx.post(f"{base}/oauth/consent", data={"request": "unknown", "code": "x"}, trust_env=False, timeout=30,
                         headers={**tunnel, "Origin": "https://evil.example"})
    assert foreign.status_code == 403


def test_a_token_still_serves_the_tunnel_host(dirs: dict[str, str]) -> None:
    with http_bridge(host_env(dirs, MCP_ALLOWED_HOSTS="bridge.example", MCP_AUTH_TOKEN=TOKEN)) as running:
        assert post_initialize(running.url, Host="bridge.example").status_code == 401
        assert post_initialize(running.url, Host="bridge.example", Authorization=f"Bearer {TOKEN}").status_code == 200
    assert "authentication: bearer token" in running.stderr


# --- 2. a launcher's OAuth proxy: an allowlist of accounts ------------------------------------

LAUNCHER = """\
import os, sys

import bridge  # first: FastMCP must read no .env
from fastmcp.server.auth.providers.jwt import JWTVerifier

from bridge.host.main import main

sys.exit(main(auth=JWTVerifier(public_key=os.environ["TEST_PUBLIC_KEY"], issuer="https://idp.test")))
"""


@pytest.fixture
def keys() -> RSAKeyPair:
    return RSAKeyPair.generate()


def launcher_command(dirs: dict[str, str]) -> list[str]:
    path = Path(dirs["MCP_WORKSPACE"]) / "launcher.py"
    path.write_text(LAUNCHER)
    return [sys.executable, str(path), "--transport", "http", "--port", "0"]


def test_a_launchers_provider_without_an_allowlist_refuses_to_start(dirs: dict[str, str], keys: RSAKeyPair) -> None:
    env = host_env(dirs, TEST_PUBLIC_KEY=keys.public_key)
    done = subprocess.run(launcher_command(dirs), env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "MCP_AUTH_ALLOWED_USERS" in done.stderr


def test_only_the_listed_accounts_get_through_a_launchers_provider(dirs: dict[str, str], keys: RSAKeyPair) -> None:
    env = host_env(dirs, TEST_PUBLIC_KEY=keys.public_key, MCP_AUTH_ALLOWED_USERS="Alice, bob@example.com")
    alice = keys.create_token(subject="1", issuer="https://idp.test", additional_claims={"login": "alice"})
    bob = keys.create_token(subject="2", issuer="https://idp.test", additional_claims={"email": "bob@example.com"})
    mallory = keys.create_token(subject="3", issuer="https://idp.test", additional_claims={"login": "mallory"})
    unverified = keys.create_token(
        subject="4", issuer="https://idp.test", additional_claims={"email": "bob@example.com", "email_verified": False}
    )
    with http_bridge(env, command=launcher_command(dirs)) as running:
        assert post_initialize(running.url, Authorization=f"Bearer {alice}").status_code == 200
        assert post_initialize(running.url, Authorization=f"Bearer {bob}").status_code == 200
        assert post_initialize(running.url, Authorization=f"Bearer {mallory}").status_code == 403
        assert post_initialize(running.url, Authorization=f"Bearer {unverified}").status_code == 403
        assert post_initialize(running.url).status_code == 401


# --- 5. nothing from the working directory ----------------------------------------------------


def test_a_dotenv_planted_in_the_working_directory_changes_nothing(dirs: dict[str, str]) -> None:
    workspace = Path(dirs["MCP_WORKSPACE"])
    (workspace / ".env").write_text(
        "FASTMCP_STATELESS_HTTP=true\nFASTMCP_SSRF_TRUST_PROXY=true\nFASTMCP_HTTP_HOST_ORIGIN_PROTECTION=false\n"
        "MCP_AUTH_TOKEN=planted-token-0123456789\nMCP_ALLOWED_HOSTS=evil.example\nMCP_ALLOW_DYNAMIC=false\n"
    )
    proc_env = host_env(dirs)
    with http_bridge(proc_env, command=["sh", "-c", f'cd "{workspace}" && exec "{BRIDGE}" --transport http --port 0']) as running:
        answer = post_initialize(running.url)
        assert answer.status_code == 200  # no planted token is required
        assert answer.headers.get("mcp-session-id")  # still stateful: FASTMCP_STATELESS_HTTP was not read
        assert post_initialize(running.url, Host="evil.example").status_code == 421  # neither host nor guard changed
        running.wait_for_line("refused Host 'evil.example'")
    assert "Host names served besides loopback: none" in running.stderr


def test_the_same_values_from_the_environment_do_take_effect(dirs: dict[str, str]) -> None:
    """The positive twin: FastMCP's settings still come from FASTMCP_* variables."""
    with http_bridge(host_env(dirs, FASTMCP_STATELESS_HTTP="true")) as running:
        assert "mcp-session-id" not in post_initialize(running.url).headers


# --- 6. sessions per client: see test_http_sessions.py
