"""What the operator switched off: checked before anything is read, spawned or written."""

from __future__ import annotations

from bridge.errors import BridgeError
from bridge.models import ServerSpec
from bridge.settings import Settings


def require_transport(settings: Settings, spec: ServerSpec) -> None:
    if spec.transport not in settings.allowed_transports:
        raise BridgeError(
            "forbidden", f"{spec.transport} servers are disabled here (MCP_ALLOWED_TRANSPORTS).", transport=spec.transport
        )


def require_dynamic(settings: Settings) -> None:
    if not settings.allow_dynamic:
        raise BridgeError("forbidden", "Adding and removing servers is disabled here (MCP_ALLOW_DYNAMIC=false).")
