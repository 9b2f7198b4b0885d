"""Secrets by reference: a header value may say `${env:NAME}` instead of holding a token.

The registry stores the reference; the value is read from the bridge's own environment only when a
connection is made, so a token never passes through the conversation, the registry or a listing.
Only names the operator lists in `MCP_SECRET_ENV_ALLOW` resolve, each optionally bound to the hosts
it may be sent to (`GITHUB_TOKEN@api.githubcopilot.com`): otherwise a model could add a server at
any URL with `${env:AWS_SECRET_ACCESS_KEY}` in a header and have the bridge send it there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from bridge.errors import BridgeError

REFERENCE = re.compile(r"\$\{env:([^}]*)\}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
HOST_PATTERN = re.compile(r"[A-Za-z0-9.*?:\[\]-]+")


def parse_allow(entry: str) -> tuple[str, str | None]:
    """`NAME` or `NAME@host-pattern` -> (name, host pattern or None); ValueError when malformed."""
    name, at, host = entry.partition("@")
    if not ENV_NAME.fullmatch(name) or (at and not HOST_PATTERN.fullmatch(host)):
        raise ValueError(f"{entry!r} is not NAME or NAME@host (host may use * wildcards)")
    return name, host.lower() or None


def _check(name: str, url: str, allow: tuple[str, ...], environ: Mapping[str, str]) -> str:
    """The value of `name` if it may be sent to `url`; else an `invalid_argument` that names only the variable."""
    if not ENV_NAME.fullmatch(name):
        raise BridgeError("invalid_argument", f"${{env:{name[:64]}}} is not a valid environment variable reference")
    host = (urlsplit(url).hostname or "").lower()
    rules = [pattern for allowed, pattern in map(parse_allow, allow) if allowed == name]
    if not rules:
        raise BridgeError(
            "invalid_argument",
            f"${{env:{name}}} is not allowed: the operator lists the variables headers may use in MCP_SECRET_ENV_ALLOW.",
            variable=name,
        )
    if not any(pattern is None or fnmatchcase(host, pattern) for pattern in rules):
        allowed_hosts = ", ".join(sorted(pattern for pattern in rules if pattern))
        raise BridgeError(
            "invalid_argument",
            f"${{env:{name}}} may only be sent to {allowed_hosts}, not to {host}.",
            variable=name,
        )
    value = environ.get(name)
    if not value:
        raise BridgeError(
            "invalid_argument", f"${{env:{name}}} is not set in the bridge's environment.", variable=name
        )
    return value


def resolve(
    headers: Mapping[str, str], url: str, allow: tuple[str, ...], environ: Mapping[str, str]
) -> dict[str, str]:
    """The headers with every `${env:NAME}` replaced by its value: at add time to check, at connect time to send."""
    return {
        key: REFERENCE.sub(lambda match: _check(match.group(1), url, allow, environ), value)
        for key, value in headers.items()
    }

