"""Settings and a Bridge for one command, built exactly as `server.main` builds them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

import config
from bridge.models import ErrorResult
from bridge.tools import Bridge, Reply
from cli.errors import CliError


def load_settings(**overrides: Any) -> config.Settings:
    """The `MCP_*` settings, with command-line overrides; a bad value names the setting, never the value."""
    try:
        return config.Settings(**overrides)
    except ValidationError as exc:
        raise CliError(f"invalid configuration: {config.describe_error(exc)}") from None


@contextmanager
def open_bridge(settings: config.Settings) -> Iterator[Bridge]:
    """The Bridge over `config.MCP_SERVERS` and the dynamic registry; closed (children killed) on exit."""
    try:
        bridge = Bridge(settings, config.MCP_SERVERS, caller="cli")
    except ValueError as exc:
        raise CliError(f"invalid configuration: {exc}") from None
    try:
        yield bridge
    finally:
        bridge.close()


def succeeded(reply: Reply) -> Any:
    """The reply's structured data, or the CliError its error maps to."""
    if isinstance(reply.data, ErrorResult):
        raise CliError.from_result(reply.data)
    return reply.data
