"""The two layers of servers, merged by name: developer config below, the dynamic file above.

- Config (`MCP_SERVERS` of the developer's config file) is source code: the conversation can use it, never change it.
- The dynamic file (`<state>/tool_mcp/servers.json`) is written by `mcp_add_server` and
  `mcp_remove_server`; a dynamic entry shadows a config entry of the same name.
- Reads are forgiving: a missing or corrupt file means "no dynamic servers" plus a warning, so
  listing never takes the bridge down. When the canonical file is missing, the entries of the
  legacy file (`<workspace>/tool_mcp/servers.json`, read once at start) stand in; the next write
  goes to the canonical file only.
- Only the developer's config may widen a child's sandbox: a file entry carrying a developer-only field
  (`env`, `network`, `read_paths`, `write_paths`, `git_write_paths`, `tools`) makes the file unreadable (a file can be planted; source code cannot).
- The file also keeps each server's drift baseline (`bridge.tools.drift`), shared by every bridge process
  and dropped when the server is added again or removed.
- Writes are strict (`bridge.store.json_file`): exclusive lock, re-read under it, refuse a file we
  cannot parse (never overwrite what we cannot read), atomic replace.
- The legacy file lies inside the workspace, where children write: it is read once, at start,
  without following symlinks, only when a small regular file, never blocking on a FIFO.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from pydantic import TypeAdapter, ValidationError

from bridge.errors import BridgeError, describe_validation, not_found
from bridge.models import (
    NAME_PATTERN,
    HttpServerSpec,
    Origin,
    ServerSpec,
    StdioServerSpec,
)
from bridge.store.baselines import Baseline
from bridge.store.json_file import (
    LOCK_TIMEOUT_S,
    JsonFile,
    Locked,
    Unreadable,
    read_untrusted,
)
from sandbox import CommandNotFound, resolve_command

logger = logging.getLogger("mcp_bridge.registry")

_SPEC = TypeAdapter(ServerSpec)
_FORMAT_VERSION = 1
LEGACY_MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class _Content:
    """What the dynamic file holds: entries (strict) and drift baselines (forgiving)."""

    entries: dict[str, ServerSpec]
    baselines: dict[str, Baseline] = field(default_factory=dict)


def parse_config_servers(servers: Mapping[str, Mapping[str, Any]]) -> dict[str, ServerSpec]:
    """Validate the developer layer once, at start; a bad entry is a startup error, not a surprise later.

    A stdio command is resolved now, on the bridge's PATH, as a host resolves what it starts: a bare
    name becomes the absolute program, and one that cannot be found stops the start, naming the entry.
    """
    parsed: dict[str, ServerSpec] = {}
    for name, raw in servers.items():
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise ValueError(f"MCP_SERVERS: invalid server name {name!r}")
        try:
            spec = _SPEC.validate_python(dict(raw))
        except ValidationError as exc:
            raise ValueError(f"MCP_SERVERS[{name!r}] is invalid: {describe_validation(exc)}") from None
        if isinstance(spec, HttpServerSpec):
            spec = spec.model_copy(update={"registered_by": "operator"})  # the developer chose this URL
        if isinstance(spec, StdioServerSpec):
            try:
                command = resolve_command(spec.command, path_env=os.environ.get("PATH", os.defpath))
            except CommandNotFound as exc:
                raise ValueError(f"MCP_SERVERS[{name!r}]: {exc}") from None
            if not os.path.isfile(command) or not os.access(command, os.X_OK):
                raise ValueError(f"MCP_SERVERS[{name!r}]: command {command} is not an executable file")
            spec = spec.model_copy(update={"command": command})
        parsed[name] = spec
    return parsed


def _parse(data: Any, where: Path) -> _Content:
    """`Unreadable` when the JSON is not a registry we understand."""
    if not isinstance(data, dict) or not isinstance(data.get("servers"), dict):
        raise Unreadable(f"{where} has no 'servers' object")
    entries: dict[str, ServerSpec] = {}
    for name, raw in data["servers"].items():
        try:
            spec = _SPEC.validate_python(raw)
        except ValidationError as exc:
            raise Unreadable(f"{where}: entry {name!r} is invalid: {exc.errors()[0]['msg']}") from None
        widened = spec.developer_only_fields()
        if spec.tools is not None or widened:
            # Only the developer's config may widen a child's sandbox or set a tool policy; a file can be planted.
            fields = ", ".join([*widened, *(["tools"] if spec.tools is not None else [])])
            raise Unreadable(f"{where}: entry {name!r} carries developer-only fields ({fields})")
        entries[name] = spec
    baselines: dict[str, Baseline] = {}
    raw_baselines = data.get("baselines", {})
    if isinstance(raw_baselines, dict):
        for name, value in raw_baselines.items():
            try:
                baselines[name] = Baseline.model_validate(value)
            except ValidationError:  # forgiving: a baseline that cannot be read is recorded anew
                continue
    return _Content(entries, baselines)


def _read_legacy(path: Path) -> dict[str, ServerSpec] | Unreadable:
    try:
        data = read_untrusted(path, LEGACY_MAX_BYTES)
        if data is None:
            return {}
        return _parse(json.loads(data), path).entries
    except Unreadable as exc:
        return exc
    except ValueError as exc:  # not UTF-8, not JSON
        return Unreadable(f"{path} is not valid JSON: {exc}")


class Registry:
    """Merged view of both layers, and the only writer of the dynamic file."""

    def __init__(
        self,
        *,
        path: Path,
        legacy_path: Path,
        config_servers: Mapping[str, ServerSpec],
    ) -> None:
        self.path = path
        self.legacy_path = legacy_path
        self.config_servers = dict(config_servers)
        self._file = JsonFile(path, lambda data: _parse(data, path))
        # Read once, now, before any child runs, so a file planted later is never taken for a registry.
        self._legacy = _read_legacy(legacy_path)

    # -- reads -----------------------------------------------------------------------------

    def _content_strict(self) -> _Content:
        content = self._file.read()
        if content is not None:
            return content
        if isinstance(self._legacy, Unreadable):
            raise self._legacy
        return _Content(dict(self._legacy))

    def _dynamic_forgiving(self) -> tuple[dict[str, ServerSpec], str | None]:
        try:
            return dict(self._content_strict().entries), None
        except Unreadable as exc:
            logger.warning("ignoring the dynamic registry: %s", exc)
            return {}, (
                f"The registry of added servers cannot be read, so none of them is listed: {exc}. "
                "Adding or removing servers fails until the user fixes or deletes that file."
            )

    def dynamic(self) -> dict[str, ServerSpec]:
        """The dynamic layer, forgiving: unreadable means empty, with a warning."""
        return self._dynamic_forgiving()[0]

    def listing(self) -> tuple[dict[str, tuple[ServerSpec, Origin]], str | None]:
        """The merged view by name, and what to tell the model when the dynamic file is unreadable.

        A silent empty list would send the model to `mcp_add_server`, which then refuses the file.
        """
        dynamic, warning = self._dynamic_forgiving()
        merged: dict[str, tuple[ServerSpec, Origin]] = {
            name: (spec, "config") for name, spec in self.config_servers.items()
        }
        for name, spec in dynamic.items():
            merged[name] = (spec, "dynamic (shadows config)" if name in self.config_servers else "dynamic")
        return dict(sorted(merged.items())), warning

    def merged(self) -> dict[str, tuple[ServerSpec, Origin]]:
        return self.listing()[0]

    def get(self, name: str) -> ServerSpec:
        """The entry of that name, the dynamic one first (it shadows the config's), without building
        the whole sorted listing on every call."""
        spec = self.dynamic().get(name) or self.config_servers.get(name)
        if spec is None:
            raise not_found(
                "unknown_server",
                f"No server named {name!r} is registered.",
                name,
                list(self.merged()),
                "Call mcp_list_tools without a server to see them.",
            )
        return spec

    def baseline(self, name: str) -> Baseline | None:
        try:
            content = self._file.read()
        except Unreadable:
            return None
        return content.baselines.get(name) if content is not None else None

    # -- writes ----------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[_Content]:
        """Hold the exclusive lock and yield the current content, read strictly under it."""
        try:
            with self._file.locked():
                try:
                    content = self._content_strict()
                except Unreadable as exc:
                    raise BridgeError(
                        "registry_error",
                        f"The registry file cannot be read, so it was left untouched: {exc}. "
                        "Fix or delete it by hand.",
                        retryable=False,
                        path=str(self.path),
                    ) from None
                yield _Content(dict(content.entries), dict(content.baselines))
        except Locked:
            raise BridgeError(
                "registry_error",
                f"The registry is locked by another writer for over {LOCK_TIMEOUT_S:g} s; try again.",
                retryable=True,
            ) from None
        except OSError as exc:
            raise self._unwritable(exc) from None

    def _unwritable(self, exc: BaseException) -> BridgeError:
        return BridgeError(
            "registry_error", f"The registry could not be written: {exc}", retryable=False, path=str(self.path)
        )

    def _write(self, content: _Content) -> None:
        payload: dict[str, Any] = {
            "version": _FORMAT_VERSION,
            "servers": {
                name: _SPEC.dump_python(spec, mode="json", exclude_defaults=False)
                for name, spec in sorted(content.entries.items())
            },
        }
        if content.baselines:
            payload["baselines"] = {name: content.baselines[name].model_dump(mode="json") for name in sorted(content.baselines)}
        self._file.publish(payload)  # an OSError (disk full, file size limit...) is `_locked`'s to classify

    def ensure_canonical(self) -> None:
        """Create the canonical file at start (holding the legacy entries, if any) when it is missing.

        Until it exists, every start would read the legacy file again, and a child may have planted
        one there in an earlier run. An unreadable legacy file is left for the user, with a warning.
        """
        if self.path.exists():
            return
        try:
            with self._locked() as content:
                if not self.path.exists():
                    self._write(content)
        except BridgeError as exc:
            logger.warning("registry not created: %s", exc.message)

    def add(self, name: str, spec: ServerSpec) -> bool:
        """Add or overwrite a dynamic entry in one step; returns whether one was replaced.

        A (re-)registered server starts over: its next catalog is its new drift baseline.
        """
        stamped = spec.model_copy(update={"added_at": datetime.now(timezone.utc)})
        with self._locked() as content:
            replaced = name in content.entries
            content.entries[name] = stamped
            content.baselines.pop(name, None)
            self._write(content)
        return replaced

    def remove(self, name: str) -> bool:
        """Remove a dynamic entry; returns whether a shadowed config entry is now visible again."""
        with self._locked() as content:
            if name not in content.entries:
                if name in self.config_servers:
                    raise BridgeError(
                        "forbidden",
                        f"{name!r} is provisioned by the developer and cannot be removed from the conversation.",
                    )
                raise not_found(
                    "unknown_server",
                    f"No dynamic server named {name!r} to remove.",
                    name,
                    list(content.entries),
                    "Call mcp_list_tools without a server to see them.",
                )
            del content.entries[name]
            content.baselines.pop(name, None)
            self._write(content)
        return name in self.config_servers

    def amend_baseline(self, name: str, amend: Callable[[Baseline | None], Baseline]) -> Baseline:
        """The server's baseline as `amend` makes it from the standing one, read and written under the
        lock (another process may have recorded or amended it meanwhile); written only if it changed."""
        with self._locked() as content:
            standing = content.baselines.get(name)
            amended = amend(standing)
            if amended != standing:
                content.baselines[name] = amended
                self._write(content)
        return amended
