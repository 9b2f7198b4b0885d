"""Secrets by reference: a header value may say `${env:NAME}` instead of holding a token.

The registry stores the reference; the value is read from the bridge's own environment only when a
connection is made, so a token never passes through the conversation, the registry or a listing.
Only names the operator lists in `MCP_SECRET_ENV_ALLOW` resolve, each bound to the one origin it may
be sent to (`GITHUB_TOKEN@https://api.githubcopilot.com:443`: scheme, host, port): otherwise a
model could add a server at any URL with `${env:AWS_SECRET_ACCESS_KEY}` in a header and have the
bridge send it there. A name listed without a binding serves only servers the operator registered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase

import httpx2

from bridge.errors import BridgeError
from bridge.settings import ENV_NAME, SecretBinding, parse_allow
from bridge.ssrf import normalise_host

REFERENCE = re.compile(r"\$\{env:([^}]*)\}")


def _origin(url: str) -> tuple[str, str, int]:
    parsed = httpx2.URL(url)
    return parsed.scheme, normalise_host(url), parsed.port or (443 if parsed.scheme == "https" else 80)


def _binds(binding: SecretBinding, origin: tuple[str, str, int], operator: bool) -> bool:
    if binding.host is None:
        return operator
    scheme, host, port = origin
    return binding.scheme == scheme and binding.port == port and fnmatchcase(host, binding.host)


def _check(name: str, url: str, allow: tuple[str, ...], environ: Mapping[str, str], operator: bool) -> str:
    """The value of `name` if it may be sent to `url`; else an `invalid_argument` that names only the variable."""
    if not ENV_NAME.fullmatch(name):
        raise BridgeError("invalid_argument", f"${{env:{name[:64]}}} is not a valid environment variable reference")
    rules = [binding for binding in map(parse_allow, allow) if binding.name == name]
    if not rules:
        raise BridgeError(
            "invalid_argument",
            f"${{env:{name}}} is not allowed: the operator lists the variables headers may use in MCP_SECRET_ENV_ALLOW.",
            variable=name,
        )
    origin = _origin(url)
    if not any(_binds(binding, origin, operator) for binding in rules):
        bound = sorted(str(binding).partition("@")[2] for binding in rules if binding.host is not None)
        where = ", ".join(bound) or "servers the operator registered (bind it as NAME@https://host:port)"
        scheme, host, port = origin
        raise BridgeError(
            "invalid_argument",
            f"${{env:{name}}} may only be sent to {where}, not to {scheme}://{host}:{port}.",
            variable=name,
        )
    value = environ.get(name)
    if not value:
        raise BridgeError(
            "invalid_argument", f"${{env:{name}}} is not set in the bridge's environment.", variable=name
        )
    return value


def resolve(
    headers: Mapping[str, str],
    url: str,
    allow: tuple[str, ...],
    environ: Mapping[str, str],
    *,
    operator: bool,
) -> dict[str, str]:
    """The headers with every `${env:NAME}` replaced by its value: at add time to check, at connect
    time to send. `operator`: the server was registered by the operator, not the conversation."""
    return {
        key: REFERENCE.sub(lambda match: _check(match.group(1), url, allow, environ, operator), value)
        for key, value in headers.items()
    }

