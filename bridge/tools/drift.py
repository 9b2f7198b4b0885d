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
import logging
from datetime import UTC, datetime

import anyio.to_thread
import mcp_types as types

from bridge.errors import BridgeError
from bridge.models import Drift, HttpServerSpec, ServerSpec
from bridge.store.baselines import Baseline
from bridge.store.registry import Registry
from bridge.wording import shown_name

logger = logging.getLogger("mcp_bridge.drift")

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
        f"WARNING: {shown_name(server)}'s tools changed since they were first seen ({drift.since:%Y-%m-%d %H:%M} UTC): "
        f"{'; '.join(parts)}. Check them before calling; re-adding the server with mcp_add_server accepts the change."
    )


def _names(names: list[str], most: int = 10) -> str:
    shown = ", ".join(shown_name(name) for name in names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


class DriftGuard:
    """Compares each catalog with the server's baseline, recording the first one it sees."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._digest_cache: dict[str, tuple[list[types.Tool], dict[str, str]]] = {}

    async def check(self, name: str, spec: ServerSpec, tools: list[types.Tool]) -> Drift | None:
        """How the tools differ from the first ones seen; the first listing records them."""
        current = self._digests(name, tools)
        baseline = self._registry.baseline(name)
        if baseline is None or baseline.identity != identity(spec):
            first = Baseline(identity=identity(spec), recorded_at=datetime.now(UTC), tools=current)
            try:  # the lock may be held by another bridge process: wait for it off the event loop
                baseline = await anyio.to_thread.run_sync(self._registry.record_baseline, name, first)
            except BridgeError as exc:  # an unreadable or locked registry: list without the guard
                logger.warning("drift baseline of %s not recorded: %s", name, exc.message)
                return None
        return compare(baseline, current)

    def _digests(self, name: str, tools: list[types.Tool]) -> dict[str, str]:
        """Digests of a catalog, computed once per fetched catalog (1000 tools cost ~10 ms to hash).

        The cache holds the very Tool objects it hashed, so an identity match cannot be a reused id.
        """
        cached = self._digest_cache.get(name)
        if cached is not None and len(cached[0]) == len(tools) and all(a is b for a, b in zip(cached[0], tools)):
            return cached[1]
        result = digests(tools)
        self._digest_cache[name] = (list(tools), result)
        return result
