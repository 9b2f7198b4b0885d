"""The client command `@modelcontextprotocol/conformance client` runs: a host driving the real bridge.

    conformance client --command "<python> tests/conformance_client.py" --scenario S

The suite starts a test server and runs this with its URL as the last argument (and, for servers
whose client the operator sets up, `MCP_CONFORMANCE_CONTEXT`: client id, secret or private key).
This provisions that URL in a developer config (`MCP_CONFIG`; a secret goes in by `${env:NAME}`
reference, never into the file), starts `mcp-bridge` over stdio with a real SDK client as its host,
lists the server's tools through `mcp_list_tools` and calls each one through `mcp_call_tool`.

When a call answers `auth_required`, it signs in the way the user's browser would: it opens
`detail.url` (or the URL the bridge asks the host to open by URL elicitation) with an HTTP client
that follows redirects; the suite's authorization server redirects at once to the bridge's loopback
callback with a code. Then it calls again. A form elicitation is accepted with the schema's defaults.
Everything this prints goes to stderr; the exit code is 0 when every call ended without an error.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
from mcp import Client, StdioServerParameters

NAME = "conformance"
MAX_SIGN_INS = 4  # one sign-in, plus step-ups; a bridge that keeps asking past this has a bug
SECRET_VARIABLE = "CONFORMANCE_CLIENT_SECRET"
KEY_VARIABLE = "CONFORMANCE_PRIVATE_KEY"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def say(*parts: object) -> None:
    print(f"conformance_client {time.monotonic():.1f}:", *parts, file=sys.stderr, flush=True)


def oauth_entry(scenario: str, context: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """The `oauth` of the developer's entry, as an operator who was given these credentials writes it.
    Every entry names the client ID metadata document the suite expects (used where a server supports CIMD)."""
    entry: dict[str, Any] = {"client_metadata_url": CLIENT_METADATA_URL}
    if "client_id" not in context:
        return entry
    entry["client_id"] = context["client_id"]
    if "client_secret" in context:
        env[SECRET_VARIABLE] = context["client_secret"]
        entry["client_secret"] = "${env:" + SECRET_VARIABLE + "}"
    if "private_key_pem" in context:
        env[KEY_VARIABLE] = context["private_key_pem"]
        entry["private_key"] = "${env:" + KEY_VARIABLE + "}"
        entry["signing_algorithm"] = context.get("signing_algorithm", "ES256")
    if scenario.startswith("auth/client-credentials-"):
        entry["grant"] = "client_credentials"
    return entry


def open_in_browser(url: str) -> None:
    """What a browser does with a sign-in URL here: follow the redirects to the loopback callback."""
    with httpx.Client(follow_redirects=True, trust_env=False, timeout=30) as browser:
        answer = browser.get(url)
    say("opened the sign-in URL:", answer.status_code, answer.text[:200])


async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    if isinstance(params, types.ElicitRequestURLParams):
        await anyio.to_thread.run_sync(open_in_browser, params.url)
        return types.ElicitResult(action="accept")
    properties = params.requested_schema.get("properties", {})
    defaults = {key: field["default"] for key, field in properties.items() if "default" in field}
    return types.ElicitResult(action="accept", content=defaults)


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Plain values for the required parameters (the suite's tools check only their types)."""
    samples = {"number": 2, "integer": 3, "string": "conformance", "boolean": True, "array": [], "object": {}}
    properties = schema.get("properties", {})
    return {key: samples.get(properties.get(key, {}).get("type"), "x") for key in schema.get("required", [])}


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One bridge tool call; an `auth_required` answer is signed in to (bounded), then called again."""
    for _ in range(MAX_SIGN_INS + 1):
        result = await client.call_tool(tool, arguments)
        data = result.structured_content or {}
        say(tool, arguments.get("tool_name", ""), "->", json.dumps(data)[:400])
        if data.get("code") != "auth_required" or "url" not in data.get("detail", {}):
            return data
        await anyio.to_thread.run_sync(open_in_browser, data["detail"]["url"])
    return data


async def run(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    with tempfile.TemporaryDirectory(prefix="conformance-", dir="/var/tmp") as base:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": base,
            "MCP_WORKSPACE": base,
            "MCP_STATE_DIR": str(Path(base, "state")),
            "MCP_CONFIG": str(Path(base, "config.py")),
            "MCP_TIMEOUT": "20",
        }
        entry = {"transport": "http", "url": url, "oauth": oauth_entry(scenario, context, env)}
        Path(env["MCP_CONFIG"]).write_text(f"MCP_SERVERS = {{{NAME!r}: {entry!r}}}\n")
        bridge = StdioServerParameters(command=str(Path(sys.executable).with_name("mcp-bridge")), env=env)
        async with Client(bridge, elicitation_callback=on_elicit) as client:
            listing = await call(client, "mcp_list_tools", {"server": NAME})
            failed = not listing.get("ok")
            for tool in listing.get("tools", []):
                schema = await call(client, "mcp_list_tools", {"server": NAME, "tool_name": tool["name"]})
                arguments = arguments_for(schema.get("tool", {}).get("inputSchema", {}))
                answer = await call(
                    client, "mcp_call_tool", {"server": NAME, "tool_name": tool["name"], "arguments_json": json.dumps(arguments)}
                )
                failed = failed or not answer.get("ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(run, sys.argv[-1]))
