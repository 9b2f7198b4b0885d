"""The two layers of servers, merged by name: developer config below, the dynamic file above.

- Config (`config.MCP_SERVERS`) is source code: the conversation can use it, never change it.
- The dynamic file (`<state>/tool_mcp/servers.json`) is written by `mcp_add_server` and
  `mcp_remove_server`; a dynamic entry shadows a config entry of the same name.
- Reads are forgiving: a missing or corrupt file means "no dynamic servers" plus a warning, so
  listing never takes the bridge down. When the canonical file is missing, the entries of the
  legacy file (`<workspace>/tool_mcp/servers.json`, read once at start) stand in; the next write
  goes to the canonical file only.
- Only `config.MCP_SERVERS` may widen a child's sandbox: a file entry carrying `env`, `network` or
  `write_paths` makes the file unreadable (a file can be planted; source code cannot).
- The file also keeps each server's drift baseline (`bridge.drift`), shared by every bridge process
  and dropped when the server is added again or removed.
- Writes are strict: exclusive lock, re-read under it, refuse a file we cannot parse (never
  overwrite what we cannot read), random 0600 temp file in the same directory, fsync,
  `os.replace`, directory fsync. A crash at any point leaves the old file or the new one; the temp
  file a killed writer leaves behind is removed by the next writer (under the lock, no temp file
  can belong to a live writer).
"""

from __future__ import annotations

import glob
import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import portalocker
from pydantic import TypeAdapter, ValidationError

from bridge.drift import Baseline
from bridge.models import BridgeError, Origin, ServerSpec, StdioServerSpec, not_found
from bridge.validation import NAME_PATTERN

logger = logging.getLogger("mcp_bridge.registry")

_SPEC = TypeAdapter(ServerSpec)
_FORMAT_VERSION = 1
LOCK_TIMEOUT_S = 5.0
# A write holds the lock for milliseconds; waiters poll it (a blocking flock could not time out).
# At portalocker's default of 0.25 s a waiter loses the race to fresh writers again and again:
# with 8 busy writers the slowest write took about 2 s, against 0.4 s at 0.01 s.
_LOCK_POLL_S = 0.01
_TEMP_SUFFIX = ".tmp"


class _Unreadable(Exception):
    """The dynamic file exists but cannot be parsed."""


def parse_config_servers(servers: Mapping[str, Mapping[str, Any]]) -> dict[str, ServerSpec]:
    """Validate the developer layer once, at start; a bad entry is a startup error, not a surprise later."""
    parsed: dict[str, ServerSpec] = {}
    for name, raw in servers.items():
        if not NAME_PATTERN.fullmatch(name):
            raise ValueError(f"config.MCP_SERVERS: invalid server name {name!r}")
        try:
            parsed[name] = _SPEC.validate_python(dict(raw))
        except ValidationError as exc:
            raise ValueError(f"config.MCP_SERVERS[{name!r}] is invalid: {exc}") from None
    return parsed


def _parse_file(path: Path) -> dict[str, ServerSpec] | None:
    """None when the file is missing; `_Unreadable` when it is not a registry we understand."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unreadable(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _Unreadable(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("servers"), dict):
        raise _Unreadable(f"{path} has no 'servers' object")
    entries: dict[str, ServerSpec] = {}
    for name, raw in data["servers"].items():
        try:
            spec = _SPEC.validate_python(raw)
        except ValidationError as exc:
            raise _Unreadable(f"{path}: entry {name!r} is invalid: {exc.errors()[0]['msg']}") from None
        if spec.tools is not None or (
            isinstance(spec, StdioServerSpec) and (spec.env or spec.network or spec.write_paths)
        ):
            # Only config.MCP_SERVERS may widen a child's sandbox or set a tool policy; a file can be planted.
            raise _Unreadable(f"{path}: entry {name!r} carries developer-only fields (env, network, write_paths, tools)")
        entries[name] = spec
    return entries


def _parse_baselines(path: Path) -> dict[str, Baseline]:
    """The drift baselines kept beside the entries; forgiving: what cannot be read is recorded anew."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        raw = data.get("baselines", {}) if isinstance(data, dict) else {}
        return {name: Baseline.model_validate(value) for name, value in raw.items()}
    except (OSError, ValueError, AttributeError):  # missing, unreadable, not JSON, not a mapping, invalid
        return {}


class Registry:
    """Merged view of both layers, and the only writer of the dynamic file."""

    def __init__(
        self,
        *,
        path: Path,
        legacy_path: Path,
        config_servers: Mapping[str, ServerSpec],
        before_replace: Callable[[Path], None] | None = None,
        after_replace: Callable[[Path], None] | None = None,
    ) -> None:
        self.path = path
        self.legacy_path = legacy_path
        self.config_servers = dict(config_servers)
        # Test hooks around the step that publishes a write: `before_replace(temp)` runs once the
        # temp file is complete and fsynced, `after_replace(path)` once it has replaced the registry.
        self._before_replace = before_replace
        self._after_replace = after_replace
        # Temp files are named after the registry, so a writer only ever cleans up its own kind.
        self._temp_prefix = f".{path.name}."
        # The legacy file lies inside the workspace, where sandboxed children may write: it is read
        # once, now, before any child runs, so a file planted later is never taken for a registry.
        try:
            self._legacy: dict[str, ServerSpec] | _Unreadable = _parse_file(legacy_path) or {}
        except _Unreadable as exc:
            self._legacy = exc

    # -- reads -----------------------------------------------------------------------------

    def _read_dynamic_strict(self) -> dict[str, ServerSpec]:
        entries = _parse_file(self.path)
        if entries is not None:
            return entries
        if isinstance(self._legacy, _Unreadable):
            raise self._legacy
        return dict(self._legacy)

    def _dynamic_forgiving(self) -> tuple[dict[str, ServerSpec], str | None]:
        try:
            return self._read_dynamic_strict(), None
        except _Unreadable as exc:
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
        merged = self.merged()
        if name not in merged:
            raise not_found(
                "unknown_server",
                f"No server named {name!r} is registered.",
                name,
                list(merged),
                "Call mcp_list_tools without a server to see them.",
            )
        return merged[name][0]

    # -- writes ----------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[dict[str, ServerSpec]]:
        """Hold the exclusive lock and yield the current entries, read strictly under it."""
        lock = portalocker.Lock(
            str(self.path) + ".lock",
            mode="a",
            timeout=LOCK_TIMEOUT_S,
            check_interval=_LOCK_POLL_S,
            flags=portalocker.LOCK_EX | portalocker.LOCK_NB,
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            lock.acquire()
        except portalocker.exceptions.AlreadyLocked:
            raise BridgeError(
                "registry_error",
                f"The registry is locked by another writer for over {LOCK_TIMEOUT_S:g} s; try again.",
                retryable=True,
            ) from None
        except (OSError, portalocker.exceptions.LockException) as exc:
            raise self._unwritable(exc) from None
        try:
            try:
                self._remove_stale_temps()
                entries = self._read_dynamic_strict()
            except _Unreadable as exc:
                raise BridgeError(
                    "registry_error",
                    f"The registry file cannot be read, so it was left untouched: {exc}. "
                    "Fix or delete it by hand.",
                    retryable=False,
                    path=str(self.path),
                ) from None
            except OSError as exc:
                raise self._unwritable(exc) from None
            yield entries
        finally:
            lock.release()

    def _unwritable(self, exc: BaseException) -> BridgeError:
        return BridgeError(
            "registry_error", f"The registry could not be written: {exc}", retryable=False, path=str(self.path)
        )

    def _remove_stale_temps(self) -> None:
        """Remove the temp files of writers killed mid-write: under the lock, none is a live writer's."""
        for stale in self.path.parent.glob(glob.escape(self._temp_prefix) + "*" + _TEMP_SUFFIX):
            stale.unlink(missing_ok=True)
            logger.warning("removed %s, left by a writer that stopped mid-write", stale)

    def _write(self, entries: Mapping[str, ServerSpec], baselines: Mapping[str, Baseline] | None = None) -> None:
        """Publish `entries`; the drift baselines are carried over unless given."""
        if baselines is None:
            baselines = _parse_baselines(self.path)
        payload: dict[str, Any] = {
            "version": _FORMAT_VERSION,
            "servers": {name: _SPEC.dump_python(spec, mode="json", exclude_defaults=False) for name, spec in sorted(entries.items())},
        }
        if baselines:
            payload["baselines"] = {name: baselines[name].model_dump(mode="json") for name in sorted(baselines)}
        data = json.dumps(payload, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
        try:
            self._publish(data)
        except OSError as exc:  # disk full, file size limit, read-only file system...
            raise self._unwritable(exc) from None

    def _publish(self, data: bytes) -> None:
        directory = self.path.parent
        fd, temp_name = tempfile.mkstemp(dir=directory, prefix=self._temp_prefix, suffix=_TEMP_SUFFIX)  # mode 0600
        temp = Path(temp_name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if self._before_replace is not None:
                self._before_replace(temp)
            os.replace(temp, self.path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        if self._after_replace is not None:
            self._after_replace(self.path)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def ensure_canonical(self) -> None:
        """Create the canonical file at start (holding the legacy entries, if any) when it is missing.

        Until it exists, every start would read the legacy file again, and a child may have planted
        one there in an earlier run. An unreadable legacy file is left for the user, with a warning.
        """
        if self.path.exists():
            return
        try:
            with self._locked() as entries:
                if not self.path.exists():
                    self._write(entries)
        except BridgeError as exc:
            logger.warning("registry not created: %s", exc.message)

    def add(self, name: str, spec: ServerSpec) -> bool:
        """Add or overwrite a dynamic entry in one step; returns whether one was replaced."""
        stamped = spec.model_copy(update={"added_at": datetime.now(timezone.utc)})
        with self._locked() as entries:
            replaced = name in entries
            entries[name] = stamped
            self._write(entries, self._without_baseline(name))
        return replaced

    def remove(self, name: str) -> bool:
        """Remove a dynamic entry; returns whether a shadowed config entry is now visible again."""
        with self._locked() as entries:
            if name not in entries:
                if name in self.config_servers:
                    raise BridgeError(
                        "forbidden",
                        f"{name!r} is provisioned by the developer in config.MCP_SERVERS and cannot be removed from the conversation.",
                    )
                raise BridgeError("unknown_server", f"No dynamic server named {name!r} to remove.")
            del entries[name]
            self._write(entries, self._without_baseline(name))
        return name in self.config_servers

    # -- drift baselines ---------------------------------------------------------------------

    def _without_baseline(self, name: str) -> dict[str, Baseline]:
        """A (re-)registered or removed server starts over: its next catalog is its new baseline."""
        baselines = _parse_baselines(self.path)
        baselines.pop(name, None)
        return baselines

    def baseline(self, name: str) -> Baseline | None:
        return _parse_baselines(self.path).get(name)

    def record_baseline(self, name: str, baseline: Baseline) -> Baseline:
        """Keep the first baseline recorded for the server's identity (another process may have won)."""
        with self._locked() as entries:
            baselines = _parse_baselines(self.path)
            standing = baselines.get(name)
            if standing is not None and standing.identity == baseline.identity:
                return standing
            baselines[name] = baseline
            self._write(entries, baselines)
        return baseline
