"""Settings and a Bridge for one command, built exactly as `bridge.host.main` builds them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from bridge.cli.errors import CliError
from bridge.errors import ErrorResult
from bridge.settings import (
    ConfigFileError,
    Settings,
    config_path,
    describe_error,
    developer_servers,
)
from bridge.tools import Bridge, Reply


def load_settings(**overrides: Any) -> Settings:
    """The `MCP_*` settings, with command-line overrides; a bad value names the setting, never the value."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise CliError(f"invalid configuration: {describe_error(exc)}") from None


def load_config_servers() -> dict[str, Any]:
    """The developer's `MCP_SERVERS`, from where the server itself reads them."""
    try:
        return developer_servers(config_path(os.environ))
    except ConfigFileError as exc:
        raise CliError(f"invalid configuration: {exc}") from None


@contextmanager
def open_bridge(settings: Settings, *, create_registry: bool = True) -> Iterator[Bridge]:
    """The Bridge over the developer's servers and the dynamic registry; closed (children killed) on exit.

    `create_registry=False` leaves a missing registry file uncreated (a dry run writes nothing).
    """
    try:
        bridge = Bridge(settings, load_config_servers(), caller="cli", create_registry=create_registry)
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
