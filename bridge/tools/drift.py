"""The drift guard: notice a server that swapped its tools after it was registered.

The first catalog the bridge fetches from a server after it was added is its baseline: one digest
per tool over what a model reads and relies on (name, description, schemas, annotations, execution).
Every later catalog is compared with it, and `mcp_list_tools` says plainly what changed. The
baseline is kept with the registry (so it survives restarts and is shared by bridge processes) and
is dropped when the server is re-registered or removed: re-adding a server accepts its new tools.

A server may list more tools to a host that can do more: the reference "everything" server lists
`trigger-elicitation-request` only to a client that declares elicitation, and the bridge asks each
server with exactly the calling host's abilities. So the baseline is the server's full list, every
tool any kind of host was shown, with what each kind of host saw first (its view): a host is
compared with its own view, and a kind of host never seen before with what hosts that can do no
more, or as much, saw. A change found is kept with the baseline and shown to every host, the ones
that cannot see the changed tool too, until the server is added again: two hosts sharing a state
folder no longer warn each other about what only one of them is shown.
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC, datetime

import anyio.to_thread
import mcp_types as types

from bridge.downstream.relay import Abilities
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


def view_of(abilities: Abilities) -> frozenset[str]:
    """What a host can do that a server may list tools by."""
    flags = ("elicit_form", "elicit_url", "sampling", "sampling_tools", "roots")
    return frozenset(flag for flag in flags if getattr(abilities, flag))


def observe(
    standing: Baseline | None, identity: str, view: frozenset[str], current: dict[str, str], now: datetime
) -> Baseline:
    """The baseline once a host of `view` was shown `current`: recorded anew for a new identity,
    else with this view's first sight added and any change found kept in its `drift`."""
    key = "+".join(sorted(view))
    if standing is None or standing.identity != identity:
        return Baseline(identity=identity, recorded_at=now, tools=current, views={key: sorted(current)})
    changed = {name for name in current.keys() & standing.tools.keys() if current[name] != standing.tools[name]}
    unseen = current.keys() - standing.tools.keys()
    views = standing.views
    if key in views:
        seen = set(views[key])
        added, removed = current.keys() - seen, seen - current.keys()
    else:  # a kind of host seen first: what it alone may be shown is not a change
        kinds = {frozenset(filter(None, other.split("+"))): set(names) for other, names in views.items()}
        removed = set().union(*(names for can, names in kinds.items() if can <= view)) - current.keys()
        added = unseen if any(view <= can for can in kinds) else set()
        views = {**views, key: sorted(current)}
    found = Drift(since=standing.recorded_at, added=sorted(added), removed=sorted(removed), changed=sorted(changed))
    tools = standing.tools | {name: current[name] for name in unseen - added}
    return standing.model_copy(update={"tools": tools, "views": views, "drift": _merged(standing.drift, found)})


def _merged(kept: Drift | None, found: Drift) -> Drift | None:
    if kept is None:
        return found if found.added or found.removed or found.changed else None
    return kept.model_copy(
        update={
            "added": sorted({*kept.added, *found.added}),
            "removed": sorted({*kept.removed, *found.removed}),
            "changed": sorted({*kept.changed, *found.changed}),
        }
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
    """Compares each catalog with the server's baseline, recording what each kind of host first sees."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._digest_cache: dict[str, tuple[list[types.Tool], dict[str, str]]] = {}

    async def check(self, name: str, spec: ServerSpec, tools: list[types.Tool], abilities: Abilities) -> Drift | None:
        """How the server's tools differ from the first ones seen, by any host; the first listing records them."""
        current, where, view = self._digests(name, tools), identity(spec), view_of(abilities)

        def amend(standing: Baseline | None) -> Baseline:
            return observe(standing, where, view, current, datetime.now(UTC))

        standing = self._registry.baseline(name)
        if standing is not None and amend(standing) == standing:  # the common case: nothing to write
            return standing.drift
        try:  # the lock may be held by another bridge process: wait for it off the event loop
            return (await anyio.to_thread.run_sync(self._registry.amend_baseline, name, amend)).drift
        except BridgeError as exc:  # an unreadable or locked registry: list without the guard
            logger.warning("drift baseline of %s not recorded: %s", name, exc.message)
            return None

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
