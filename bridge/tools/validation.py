"""Every tool input becomes a typed value here, or a `BridgeError("invalid_argument")`.

Nothing downstream of this module sees raw conversation input: no session opens, no child starts
and no registry write happens before these checks pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

from bridge.errors import BridgeError
from bridge.models import LITERAL_REFUSED, NAME_PATTERN, HttpServerSpec, StdioServerSpec, secret_env_problem
from sandbox import CommandNotFound, resolve_command

# RFC 7230 token characters for a header name; values must be printable, single-line text.
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")
_HEADER_VALUE = re.compile(r"^[\t\x20-\x7e]{0,8192}$")
# Headers that steer the request itself (hop-by-hop, framing, routing) or that unlock a cloud
# metadata service: a registered server must not be able to set them (RFC 9110 §7.6.1, SSRF).
_RESERVED_HEADERS = frozenset(
    {
        "host", "connection", "keep-alive", "transfer-encoding", "content-length", "upgrade", "te", "trailer",
        "forwarded", "via", "x-real-ip", "true-client-ip", "cf-connecting-ip",
        "metadata-flavor", "metadata", "x-google-metadata-request",
    }
)
_RESERVED_PREFIXES = ("proxy-", "x-forwarded-", "x-aws-ec2-metadata-token")
_MAX_URL = 2048
_MAX_JSON = 1_000_000
_MAX_ARGS = 256
MAX_DEPTH = 100  # arrays and objects inside one another; no tool's arguments need more


def _invalid(message: str, **detail: Any) -> BridgeError:
    return BridgeError("invalid_argument", message, **detail)


def _is_unicode(value: str) -> bool:
    """False for a lone surrogate (a Python caller, or a `\\ud800` JSON escape): no file name, URL,
    registry or JSON message can carry one, so it is refused here rather than crash later."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def result_handle(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > 256 or not _is_unicode(value):
        raise _invalid("result_handle must be the handle a cut result named")
    return value


def server_name(value: object, field: str = "name") -> str:
    if not isinstance(value, str) or not NAME_PATTERN.fullmatch(value):
        raise _invalid(f"{field} must match {NAME_PATTERN.pattern} (letters, digits, _ and -, at most 64)")
    return value


def tool_name(value: object) -> str:
    """Downstream tool names are the downstream's business; only reject what cannot be a name."""
    if not isinstance(value, str) or not value or len(value) > 256 or "\x00" in value or not _is_unicode(value):
        raise _invalid("tool_name must be a non-empty string of at most 256 characters")
    return value


def query(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 500 or not _is_unicode(value):
        raise _invalid("query must be a non-empty string of at most 500 characters")
    return value.strip()


def limit(value: object) -> int:
    if value is None:
        return 10
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 50:
        raise _invalid("limit must be a whole number from 1 to 50")
    return value


def _decode_json(text: object, field: str) -> Any:
    if not isinstance(text, str):
        raise _invalid(f"{field} must be a string holding JSON")
    if len(text) > _MAX_JSON:
        raise _invalid(f"{field} is longer than {_MAX_JSON} characters")
    try:
        value = json.loads(text)
    except RecursionError:  # nesting deeper than the interpreter's limit
        raise _invalid(f"{field} nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise _invalid(f"{field} is not valid JSON: {exc}") from None
    _strict_json(value, field)
    return value


def _nesting(value: Any) -> int:
    """How deep arrays and objects nest in `value` (a scalar: 0), measured without recursion and
    no further than one level past `MAX_DEPTH`."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= MAX_DEPTH:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _strict_json(value: Any, field: str) -> None:
    if _nesting(value) > MAX_DEPTH:
        raise _invalid(f"{field} nests deeper than {MAX_DEPTH} levels")
    try:
        # Python's decoder also takes NaN, Infinity, 1e999 and lone surrogate escapes, which nothing
        # downstream can send on: keep only what encodes back to strict JSON in UTF-8.
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    except (ValueError, TypeError, RecursionError) as exc:
        raise _invalid(f"{field} holds a value JSON cannot carry (NaN, Infinity or a lone surrogate): {exc}") from None
    if len(encoded) > _MAX_JSON:
        raise _invalid(f"{field} is longer than {_MAX_JSON} characters")


def arguments(value: object) -> dict[str, Any]:
    """`arguments_json` is a JSON object's text or, as models and the Inspector send it, the object
    itself. Omitted means no arguments; an empty or blank text is a mistake, not `{}`."""
    if value is None:
        return {}
    if isinstance(value, dict):
        _strict_json(value, "arguments_json")
        return value
    if isinstance(value, str) and not value.strip():
        raise _invalid('arguments_json is empty; give a JSON object, e.g. {} for no arguments')
    value = _decode_json(value, "arguments_json")
    if not isinstance(value, dict):
        raise _invalid(f"arguments_json must be a JSON object, got {type(value).__name__}")
    return value


def url(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_URL:
        raise _invalid(f"url must be a non-empty string of at most {_MAX_URL} characters")
    if any(ord(ch) < 0x21 or 0x7F <= ord(ch) <= 0x9F for ch in value) or not _is_unicode(value):
        raise _invalid("url must not contain spaces, control characters or lone surrogates")
    try:
        parts = urlsplit(value)
        hostname, _ = parts.hostname, parts.port  # .port checks the range 0-65535
        httpx2.URL(value)  # the parser the HTTP transport will use: IDNA, IPv4/IPv6 literals
    except (ValueError, httpx2.InvalidURL) as exc:
        raise _invalid(f"url is malformed: {exc}") from None
    if parts.scheme not in ("http", "https") or not hostname:
        raise _invalid("url must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        # The url is listed back to the model; credentials belong in headers_json, which never is.
        raise _invalid("url must not carry user:password@; put credentials in headers_json (e.g. Authorization)")
    return value


def headers(text: object) -> dict[str, str]:
    if text is None or (isinstance(text, str) and not text.strip()):
        return {}
    value = _decode_json(text, "headers_json")
    if not isinstance(value, dict):
        raise _invalid("headers_json must be a JSON object of string to string")
    result: dict[str, str] = {}
    for key, item in value.items():
        if not _HEADER_NAME.fullmatch(key):
            raise _invalid("headers_json has an invalid header name", header=key[:64])
        lowered = key.lower()
        if lowered in _RESERVED_HEADERS or lowered.startswith(_RESERVED_PREFIXES):
            raise BridgeError(
                "forbidden", f"header {key!r} cannot be registered: it steers the connection or a metadata service"
            )
        if not isinstance(item, str) or not item.isascii() or not _HEADER_VALUE.fullmatch(item):
            # The value may be a secret: name the header, never echo the value.
            raise _invalid(f"header {key!r} must be a single-line string of printable ASCII")
        result[key] = item
    return result


def command(value: object, path_env: str) -> str:
    """An absolute path, or a bare name looked up on `path_env` (`sandbox.resolve_command`, as the
    CLI does): the program as it will run, an absolute path."""
    if not isinstance(value, str) or not value or "\x00" in value or not _is_unicode(value):
        raise _invalid("command must be a non-empty string")
    try:
        resolved = resolve_command(value, path_env=path_env)
    except CommandNotFound as exc:
        raise _invalid(str(exc), command=value[:256]) from None
    path = Path(resolved)
    try:
        is_file = path.is_file()
    except OSError as exc:  # e.g. a component over NAME_MAX
        raise _invalid(f"command is not a usable path: {exc.strerror}", command=value[:256]) from None
    if not is_file:
        hint = _on_path(path.name, path_env)
        raise _invalid(f"command {value!r} does not exist or is not a file{hint}", command=value[:256])
    if not os.access(path, os.X_OK):
        raise _invalid("command is not executable", command=value[:256])
    return resolved


def _on_path(name: str, path_env: str) -> str:
    """For a guessed absolute path (`/usr/local/bin/npx`): where PATH has a program of that name."""
    found = shutil.which(name, path=path_env) if name else None
    return f"; {name} on PATH is {found} (or give just {name!r})" if found else ""


def args(text: object) -> tuple[str, ...]:
    if text is None or (isinstance(text, str) and not text.strip()):
        return ()
    value = _decode_json(text, "args_json")
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _invalid("args_json must be a JSON array of strings")
    if len(value) > _MAX_ARGS or any("\x00" in item for item in value):
        raise _invalid(f"args_json must hold at most {_MAX_ARGS} strings without NUL bytes")
    return tuple(value)


def env(text: object) -> dict[str, str]:
    """`env_json`: variables for a stdio server, each value a reference `${env:NAME}`, never a value
    (which would be stored in the registry and seen by the conversation)."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return {}
    value = _decode_json(text, "env_json")
    if not isinstance(value, dict):
        raise _invalid("env_json must be a JSON object of variable name to ${env:NAME}")
    for variable, reference in value.items():
        problem = secret_env_problem(variable, reference)
        if problem == LITERAL_REFUSED:  # the value may be the secret itself: named, never echoed
            raise _invalid(
                f"env_json's {variable} must be a reference like ${{env:{variable}}}, not a value: a value would be "
                "stored and shown to the conversation. The operator sets the variable in the bridge's environment "
                f"and allows it with MCP_SECRET_ENV_ALLOW={variable}@server:<this server's name>."
            )
        if problem is not None:
            raise _invalid(f"env_json cannot set {variable[:64]!r}: {problem}")
    return value


def cwd(value: object, workspace: Path) -> str:
    """`~` expanded, symlinks resolved, and the result inside the workspace."""
    if value is None or value == "":
        return str(workspace)
    if not isinstance(value, str) or "\x00" in value or len(value) > 4096 or not _is_unicode(value):
        raise _invalid("cwd must be a path string")
    try:
        resolved = Path(value).expanduser()
        if not resolved.is_absolute():
            resolved = workspace / resolved
        resolved = resolved.resolve()
        is_dir = resolved.is_dir()
    except RuntimeError as exc:  # "~someone" for an unknown user
        raise _invalid(f"cwd cannot be expanded: {exc}") from None
    except OSError as exc:  # e.g. a component over NAME_MAX, a symlink loop
        raise _invalid(f"cwd is not a usable path: {exc.strerror}") from None
    if not resolved.is_relative_to(workspace):
        raise _invalid(f"cwd must lie inside the workspace {workspace}", cwd=str(resolved))
    if not is_dir:
        raise _invalid("cwd is not an existing directory", cwd=str(resolved))
    return str(resolved)


def _given(value: object, field: str) -> bool:
    """None and "" mean absent; any other non-string (0, [], False...) is a wrong type, not absent."""
    if value is None or value == "":
        return False
    if not isinstance(value, str):
        raise _invalid(f"{field} must be a string")
    return True


def server_spec(
    *,
    url_value: object,
    headers_json: object,
    command_value: object,
    args_json: object,
    cwd_value: object,
    workspace: Path,
    path_env: str,
    env_json: object = None,
) -> HttpServerSpec | StdioServerSpec:
    """Exactly one of url/command; the other kind's fields must be absent."""
    has_url, has_command = _given(url_value, "url"), _given(command_value, "command")
    if has_url == has_command:
        raise _invalid("give exactly one of url (HTTP server) or command (local stdio server)")
    if has_url:
        if _given(args_json, "args_json") or _given(cwd_value, "cwd") or _given(env_json, "env_json"):
            raise _invalid("args_json, env_json and cwd belong to a command, not a url (a url's secrets go in headers_json)")
        return HttpServerSpec(url=url(url_value), headers=headers(headers_json))
    if _given(headers_json, "headers_json"):
        raise _invalid("headers_json belongs to a url, not a command")
    return StdioServerSpec(
        command=command(command_value, path_env), args=args(args_json), cwd=cwd(cwd_value, workspace), secret_env=env(env_json)
    )
