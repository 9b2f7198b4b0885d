"""Real pieces for the OAuth tests: a FastMCP app served by uvicorn on 127.0.0.1, the owner's browser,
the MCP SDK's own OAuth client, and an HTTPS document server for CIMD clients.

Nothing here dials anything but 127.0.0.1; a redirect to a client's redirect URI (even
https://chatgpt.com/...) is read from the `Location` header, never followed.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import json
import re
import secrets
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastmcp import FastMCP
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from bridge.host.oauth import OAuthSettings, build_oauth_provider, list_pending

LOOPBACK_REDIRECT = "http://127.0.0.1:9/callback"  # never listened on: the browser does not follow it
CHATGPT_REDIRECT = "https://chatgpt.com/connector_platform_oauth_redirect"


def _listening_socket(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


class ServedBridge:
    """A FastMCP app with one tool behind `build_oauth_provider`, on a fixed loopback port."""

    def __init__(self, state_dir: Path, **overrides: Any) -> None:
        self.state_dir = state_dir
        self._overrides = overrides
        self._sock = _listening_socket()
        self.port = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.mcp_url = f"{self.base_url}/mcp"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def settings(self) -> OAuthSettings:
        return OAuthSettings(state_dir=self.state_dir, base_url=self.base_url, **self._overrides)

    def start(self) -> None:
        """A new provider on the same state dir: what a restarted bridge process has."""
        app = FastMCP("oauth-test", auth=build_oauth_provider(self.settings))

        @app.tool
        def echo(text: str) -> str:
            """Say it back."""
            return text

        self._server = uvicorn.Server(uvicorn.Config(app.http_app(path="/mcp"), log_level="warning", lifespan="on"))
        sock = self._sock or _listening_socket(self.port)
        self._sock = None
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the test server did not start")
            threading.Event().wait(0.01)

    def stop(self) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=15)
        assert not self._thread.is_alive(), "the test server did not stop"

    def restart(self) -> None:
        self.stop()
        self.start()


class MemoryTokens:
    """The SDK's `TokenStorage`, in memory, so a test can read and reuse what the client holds."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


def form_fields(html: str) -> dict[str, str]:
    """The named inputs of the consent page's form, and its action as `_action`."""
    fields = dict(re.findall(r'<input type=hidden name=(\w+) value="([^"]*)"', html))
    action = re.search(r'<form method=post action="([^"]*)"', html)
    assert action, html
    fields["_action"] = action.group(1).replace("&amp;", "&")
    return fields


def page_request_name(html: str) -> str:
    """The request name the consent page shows."""
    found = re.search(r"Request: <strong>([a-z]+-[a-z]+)</strong>", html)
    assert found, html
    return found.group(1)


def redirect_params(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 302, (response.status_code, response.text)
    return {k: v[0] for k, v in parse_qs(urlsplit(response.headers["location"]).query).items()}


@dataclass
class Owner:
    """The owner at the browser: opens the authorization URL, reads the code, types it, hands back the result."""

    state_dir: Path
    read_code: Callable[[str], str] | None = None  # client_id -> code; default: `list_pending`
    authorizations: int = 0
    issued_codes: list[str] = field(default_factory=list)
    _result: asyncio.Future[AuthorizationCodeResult] | None = None

    def code_for(self, client_id: str) -> str:
        if self.read_code is not None:
            return self.read_code(client_id)
        (pending,) = [p for p in list_pending(self.state_dir) if p.client_id == client_id]
        return pending.pairing_code

    async def redirect_handler(self, authorization_url: str) -> None:
        self.authorizations += 1
        client_id = parse_qs(urlsplit(authorization_url).query)["client_id"][0]
        async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as browser:
            to_consent = await browser.get(authorization_url)
            assert to_consent.status_code == 302, to_consent.text
            page = await browser.get(to_consent.headers["location"])
            assert page.status_code == 200, page.text
            fields = form_fields(page.text)
            back = await browser.post(
                fields.pop("_action"), data={**fields, "code": self.code_for(client_id)}
            )
        params = redirect_params(back)
        self.issued_codes.append(params["code"])
        self._result = asyncio.get_running_loop().create_future()
        self._result.set_result(AuthorizationCodeResult(code=params["code"], state=params.get("state")))

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self._result is not None, "the redirect handler did not run"
        return await self._result


def sdk_oauth(
    served: ServedBridge,
    owner: Owner,
    storage: MemoryTokens,
    *,
    redirect_uri: str = LOOPBACK_REDIRECT,
    client_name: str = "SDK test client",
    client_metadata_url: str | None = None,
    token_endpoint_auth_method: str | None = "none",
) -> OAuthClientProvider:
    """The MCP SDK's OAuth client, wired to the owner's browser."""
    return OAuthClientProvider(
        server_url=served.mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name=client_name,
            redirect_uris=[redirect_uri],
            token_endpoint_auth_method=token_endpoint_auth_method,
            grant_types=["authorization_code", "refresh_token"],
        ),
        storage=storage,
        redirect_handler=owner.redirect_handler,
        callback_handler=owner.callback_handler,
        client_metadata_url=client_metadata_url,
    )


async def echo_through(served: ServedBridge, auth: httpx2.Auth, user_agent: str = "oauth-tests/1.0") -> list[str]:
    """Initialize, list the tools, call `echo`; the tool names, after checking the echo."""
    http = create_mcp_http_client(headers={"User-Agent": user_agent}, auth=auth)
    async with http, streamable_http_client(served.mcp_url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("echo", {"text": "hello"})
            assert not result.is_error, result
            assert result.content[0].text == "hello"
            return [tool.name for tool in tools.tools]


def initialize_with(served: ServedBridge, token: str | None) -> httpx.Response:
    """A raw `initialize` POST with or without a bearer token."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    return httpx.post(served.mcp_url, headers=headers, json=body, trust_env=False, timeout=10)


# -- an HTTPS server on 127.0.0.1 for CIMD documents ---------------------------------------------


def make_loopback_tls(directory: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for 127.0.0.1 it signs: (ca, cert, key) PEM files."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "oauth test CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(IPv4Address("127.0.0.1"))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.pem", directory / "cert.pem", directory / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


class DocumentServer:
    """Serves JSON documents by path over HTTPS on 127.0.0.1, as a client's CIMD host would."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.documents: dict[str, dict[str, Any]] = {}
        documents = self.documents

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                doc = documents.get(self.path)
                body = json.dumps(doc).encode() if doc is not None else b"{}"
                self.send_response(200 if doc is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(cert, key)
        self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self.origin = f"https://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def publish(self, path: str, document: dict[str, Any]) -> str:
        self.documents[path] = document
        return self.origin + path

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


# -- a client written by hand, for what the SDK's client would never send ---------------------------


def through_tunnel(source: str | None) -> dict[str, str]:
    """The header a tunnel on this machine adds naming who it relays (none: a direct loopback caller)."""
    return {} if source is None else {"X-Forwarded-For": source}


def register(served: ServedBridge, source: str | None = None, **metadata: Any) -> httpx.Response:
    """A dynamic registration (RFC 7591) of a public client, with `metadata` on top, from `source`."""
    body = {"client_name": "raw client", "redirect_uris": [LOOPBACK_REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], **metadata}
    return httpx.post(f"{served.base_url}/register", json=body, headers=through_tunnel(source), trust_env=False,
                      timeout=10)


@dataclass
class RawClient:
    """A registered public client driving `/authorize`, the consent page and `/token` step by step."""

    served: ServedBridge
    client_id: str
    redirect_uri: str = LOOPBACK_REDIRECT
    source: str | None = None
    verifier: str = field(default_factory=lambda: secrets.token_urlsafe(48))
    browser: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.browser = httpx.Client(follow_redirects=False, trust_env=False, headers=through_tunnel(self.source))

    @classmethod
    def registered(cls, served: ServedBridge, source: str | None = None, **metadata: Any) -> RawClient:
        response = register(served, source, **metadata)
        assert response.status_code == 201, response.text
        info = response.json()
        return cls(served, info["client_id"], info["redirect_uris"][0], source)

    @property
    def challenge(self) -> str:
        return base64.urlsafe_b64encode(hashlib.sha256(self.verifier.encode()).digest()).decode().rstrip("=")

    def authorize(self, **params: str) -> httpx.Response:
        query = {"response_type": "code", "client_id": self.client_id, "redirect_uri": self.redirect_uri,
                 "code_challenge": self.challenge, "code_challenge_method": "S256", "state": "st-1",
                 "resource": self.served.mcp_url, "scope": "offline_access", **params}
        return self.browser.get(f"{self.served.base_url}/authorize", params=query)

    def open_consent(self) -> tuple[httpx.Response, dict[str, str]]:
        """Authorize and follow to the consent page: the page and its form's fields."""
        to_consent = self.authorize()
        assert to_consent.status_code == 302, to_consent.text
        page = self.browser.get(to_consent.headers["location"])
        return page, form_fields(page.text)

    def submit(self, fields: dict[str, str], code: str) -> httpx.Response:
        action = fields["_action"]
        return self.browser.post(action, data={k: v for k, v in fields.items() if k != "_action"} | {"code": code})

    def token(self, **form: str) -> httpx.Response:
        return self.browser.post(f"{self.served.base_url}/token", data={"client_id": self.client_id, **form},
                                 timeout=10)

    def exchange(self, code: str, **form: str) -> httpx.Response:
        return self.token(**{"grant_type": "authorization_code", "code": code, "redirect_uri": self.redirect_uri,
                             "code_verifier": self.verifier, "resource": self.served.mcp_url, **form})

    def refresh(self, refresh_token: str, **form: str) -> httpx.Response:
        return self.token(**{"grant_type": "refresh_token", "refresh_token": refresh_token,
                             "resource": self.served.mcp_url, **form})

    def tokens_by_consent(self, state_dir: Path) -> dict[str, Any]:
        """The whole flow, by hand: consent with the right code, then the code exchange's JSON."""
        _page, fields = self.open_consent()
        (pending,) = [p for p in list_pending(state_dir) if p.name == page_request_name(_page.text)]
        code = redirect_params(self.submit(fields, pending.pairing_code))["code"]
        response = self.exchange(code)
        assert response.status_code == 200, response.text
        return response.json() | {"_code": code}
