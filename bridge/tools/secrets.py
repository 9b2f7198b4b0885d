"""Secrets by reference: a header value, or a stdio server's `env_json` value, says `${env:NAME}`
instead of holding a token.

The registry stores the reference; the value is read from the bridge's own environment only when a
connection is made or a child started, so a token never passes through the conversation, the
registry, a listing, a log or the audit. Only names the operator lists in `MCP_SECRET_ENV_ALLOW`
resolve, each bound to where it may go: a header's to one origin
(`GITHUB_TOKEN@https://api.githubcopilot.com:443`: scheme, host, port), otherwise a model could
add a server at any URL with `${env:AWS_SECRET_ACCESS_KEY}` in a header and have the bridge send it
there; an environment variable's to one server name (`WEATHER_API_KEY@server:weather`). A name
listed without a binding serves only servers the operator registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase

import httpx2

from bridge.errors import BridgeError
from bridge.models import ENV_REFERENCE, env_reference
from bridge.settings import ENV_NAME, SecretBinding, parse_allow
from bridge.ssrf import normalise_host

def _origin(url: str) -> tuple[str, str, int]:
    parsed = httpx2.URL(url)
    return parsed.scheme, normalise_host(url), parsed.port or (443 if parsed.scheme == "https" else 80)


def _binds(binding: SecretBinding, origin: tuple[str, str, int], operator: bool) -> bool:
    if binding.server is not None:  # a server's environment, never a header
        return False
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
        bound += [f"the env of {binding.server}" for binding in rules if binding.server is not None]
        where = ", ".join(bound) or "servers the operator registered (bind it as NAME@https://host:port)"
        scheme, host, port = origin
        raise BridgeError(
            "invalid_argument",
            f"${{env:{name}}} may only be sent to {where}, not to {scheme}://{host}:{port}.",
            variable=name,
        )
    return _value(name, environ)


def _value(name: str, environ: Mapping[str, str]) -> str:
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
        key: ENV_REFERENCE.sub(lambda match: _check(match.group(1), url, allow, environ, operator), value)
        for key, value in headers.items()
    }


def resolve_env(
    references: Mapping[str, str], server: str, allow: tuple[str, ...], environ: Mapping[str, str], *, operator: bool
) -> dict[str, str]:
    """A stdio server's `env_json` with each `${env:NAME}` replaced by its value: at add time to
    check, at each start to give the child. A variable resolves for the server of the name it is
    bound to (`NAME@server:<name>`), or, bound to nothing, for a server the operator registered."""
    resolved = {}
    for variable, reference in references.items():
        name = env_reference(reference)
        assert name is not None, "StdioServerSpec admits references only"
        rules = [binding for binding in map(parse_allow, allow) if binding.name == name]
        if not any(binding.server == server or (operator and binding == SecretBinding(name)) for binding in rules):
            raise BridgeError(
                "invalid_argument",
                f"${{env:{name}}} is not allowed for server {server!r}: the operator allows it by adding "
                f"{name}@server:{server} to MCP_SECRET_ENV_ALLOW.",
                variable=name,
            )
        resolved[variable] = _value(name, environ)
    return resolved

