"""The drift guard: notice a server that swapped its tools after it was registered.

The first catalog the bridge fetches from a server after it was added is its baseline: one digest
per tool over what a model reads and relies on (name, description, schemas, annotations, execution).
Every later catalog is compared with it, and `mcp_list_tools` says plainly what changed. The
baseline is kept with the registry (so it survives restarts and is shared by bridge processes) and
is dropped when the server is re-registered or removed: re-adding a server accepts its new tools.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

import mcp_types as types
from pydantic import BaseModel, Field

from bridge.models import Drift, HttpServerSpec, ServerSpec

_DIGESTED = ("name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution")


def digests(tools: list[types.Tool]) -> dict[str, str]:
    """Tool name -> sha256 of its canonical JSON (the fields listed in `_DIGESTED`)."""
    result = {}
    for tool in tools:
        definition = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        kept = {key: definition[key] for key in _DIGESTED if key in definition}
        canonical = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        result[tool.name] = hashlib.sha256(canonical.encode()).hexdigest()
    return result


class Baseline(BaseModel):
    """The digests a server's tools had when first seen, for one identity of the server."""

    identity: str = Field(description="Digest of where the server is (url, or command, args and cwd).")
    recorded_at: datetime
    tools: dict[str, str]


def identity(spec: ServerSpec) -> str:
    """Where a server is, not how it is reached: rotating a token in a header keeps the baseline."""
    if isinstance(spec, HttpServerSpec):
        where: dict[str, object] = {"url": spec.url}
    else:
        where = {"command": spec.command, "args": list(spec.args), "cwd": spec.cwd}
    return hashlib.sha256(json.dumps(where, sort_keys=True).encode()).hexdigest()


def compare(baseline: Baseline, current: dict[str, str]) -> Drift | None:
    """None when the tools are exactly the baseline's."""
    if baseline.tools == current:
        return None
    return Drift(
        since=baseline.recorded_at,
        added=sorted(current.keys() - baseline.tools.keys()),
        removed=sorted(baseline.tools.keys() - current.keys()),
        changed=sorted(name for name in current.keys() & baseline.tools.keys() if current[name] != baseline.tools[name]),
    )


def describe(server: str, drift: Drift) -> str:
    """One plain paragraph for the model and the person reading along; long name lists are shortened."""
    parts = [
        f"{label}: {_names(names)}"
        for label, names in (("new", drift.added), ("gone", drift.removed), ("changed", drift.changed))
        if names
    ]
    return (
        f"WARNING: {server}'s tools changed since they were first seen ({drift.since:%Y-%m-%d %H:%M} UTC): "
        f"{'; '.join(parts)}. Check them before calling; re-adding the server with mcp_add_server accepts the change."
    )


def _names(names: list[str], most: int = 10) -> str:
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"
