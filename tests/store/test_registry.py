"""The registry's two layers and its file discipline, on a real file system.

Config (developer) below, the dynamic file above: merge and shadowing, origin labels, removal rules.
Reads forgive a corrupt file; writes refuse it. Writes are locked, atomic, 0600, leave no temp file,
and go to the canonical path even when the entries were read from the legacy one.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import portalocker
import pytest

import bridge.store.registry as registry_module
from bridge.errors import BridgeError
from bridge.models import HttpServerSpec, StdioServerSpec
from bridge.store import json_file
from bridge.store.registry import Registry, parse_config_servers

CONFIG = {
    "docs": {"transport": "http", "url": "https://config.example/mcp", "headers": {"Authorization": "Bearer cfg"}},
    "time": {"transport": "stdio", "command": "/usr/bin/true", "args": ["--config"]},
}
DYNAMIC_DOCS = HttpServerSpec(url="https://dynamic.example/mcp")
OTHER = HttpServerSpec(url="https://other.example/mcp")


@pytest.fixture
def paths(tmp_path: Path) -> tuple[Path, Path]:
    """(canonical, legacy) registry paths; neither file exists yet."""
    return tmp_path / "state" / "tool_mcp" / "servers.json", tmp_path / "ws" / "tool_mcp" / "servers.json"


MakeRegistry = Callable[..., Registry]


@pytest.fixture
def make_registry(paths: tuple[Path, Path]) -> MakeRegistry:
    def make(config: dict[str, dict[str, Any]] | None = None) -> Registry:
        canonical, legacy = paths
        return Registry(
            path=canonical, legacy_path=legacy, config_servers=parse_config_servers(CONFIG if config is None else config)
        )

    return make


@pytest.fixture
def registry(make_registry: MakeRegistry) -> Registry:
    return make_registry()


def write_registry_file(path: Path, servers: dict[str, dict[str, Any]]) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"version": 1, "servers": servers}).encode()
    path.write_bytes(data)
    return data


def temp_files(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if name.endswith(".tmp") or name.startswith(".servers.")]


# -- layers ----------------------------------------------------------------------------------


def test_config_entries_are_listed_with_origin_config(registry: Registry) -> None:
    merged = registry.merged()
    assert {name: origin for name, (_, origin) in merged.items()} == {"docs": "config", "time": "config"}
    assert merged["time"][0] == StdioServerSpec(command="/usr/bin/true", args=("--config",))


def test_merged_holds_both_layers_sorted_by_name(registry: Registry) -> None:
    registry.add("alpha", OTHER)
    assert list(registry.merged()) == ["alpha", "docs", "time"]


def test_a_new_dynamic_entry_has_origin_dynamic(registry: Registry) -> None:
    registry.add("alpha", OTHER)
    spec, origin = registry.merged()["alpha"]
    assert origin == "dynamic"
    assert spec.url == OTHER.url


def test_a_dynamic_entry_shadows_the_config_entry_of_the_same_name(registry: Registry) -> None:
    registry.add("docs", DYNAMIC_DOCS)
    spec, origin = registry.merged()["docs"]
    assert origin == "dynamic (shadows config)"
    assert spec.url == "https://dynamic.example/mcp"
    assert registry.get("docs").url == "https://dynamic.example/mcp"


def test_every_dynamic_entry_records_its_transport_and_when_it_was_added(registry: Registry) -> None:
    registry.add("alpha", OTHER)
    entry = json.loads(registry.path.read_text())["servers"]["alpha"]
    assert entry["transport"] == "http"
    assert entry["added_at"]


def test_get_of_an_unknown_name_is_unknown_server_with_close_matches(registry: Registry) -> None:
    with pytest.raises(BridgeError) as caught:
        registry.get("doc")
    assert caught.value.code == "unknown_server"
    assert caught.value.detail["close_matches"] == ["docs"]


# -- removal ---------------------------------------------------------------------------------


def test_remove_restores_shadowed_config_entry(registry: Registry) -> None:
    registry.add("docs", DYNAMIC_DOCS)
    assert registry.remove("docs") is True
    spec, origin = registry.merged()["docs"]
    assert origin == "config"
    assert spec.url == "https://config.example/mcp"


def test_remove_of_a_dynamic_only_entry_restores_nothing(registry: Registry) -> None:
    registry.add("alpha", OTHER)
    assert registry.remove("alpha") is False
    assert "alpha" not in registry.merged()


def test_removing_a_config_only_entry_is_forbidden(registry: Registry) -> None:
    with pytest.raises(BridgeError) as caught:
        registry.remove("docs")
    assert caught.value.code == "forbidden"
    assert registry.merged()["docs"][1] == "config"


def test_removing_an_unknown_name_is_unknown_server(registry: Registry) -> None:
    with pytest.raises(BridgeError) as caught:
        registry.remove("nobody")
    assert caught.value.code == "unknown_server"


# -- add -------------------------------------------------------------------------------------


def test_adding_a_new_name_reports_not_replaced(registry: Registry) -> None:
    assert registry.add("alpha", OTHER) is False


def test_adding_an_existing_name_overwrites_it_in_one_step(registry: Registry) -> None:
    registry.add("alpha", OTHER)
    assert registry.add("alpha", DYNAMIC_DOCS) is True
    assert registry.get("alpha").url == DYNAMIC_DOCS.url
    assert list(json.loads(registry.path.read_text())["servers"]) == ["alpha"]


def test_entries_survive_a_new_registry_object(registry: Registry, make_registry: MakeRegistry) -> None:
    registry.add("alpha", StdioServerSpec(command="/usr/bin/true", args=("a b", "c"), cwd="/srv"))
    again = make_registry().get("alpha")
    assert (again.command, again.args, again.cwd) == ("/usr/bin/true", ("a b", "c"), "/srv")


# -- forgiving read, strict write ------------------------------------------------------------


def test_a_corrupt_file_reads_as_no_dynamic_servers_with_a_warning(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    registry.path.parent.mkdir(parents=True)
    registry.path.write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="mcp_bridge.registry"):
        assert registry.dynamic() == {}
        assert set(registry.merged()) == {"docs", "time"}
    assert any(record.levelno == logging.WARNING and str(registry.path) in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(
    "content",
    ['["a list"]', '{"version": 1}', '{"servers": {"x": {"transport": "carrier-pigeon"}}}', "\udcff"],
    ids=["not-an-object", "no-servers", "invalid-entry", "not-utf8"],
)
def test_an_unparseable_file_reads_as_no_dynamic_servers(registry: Registry, content: str) -> None:
    registry.path.parent.mkdir(parents=True)
    registry.path.write_bytes(content.encode("utf-8", errors="surrogateescape"))
    assert registry.dynamic() == {}


def test_a_missing_file_reads_as_no_dynamic_servers_without_a_warning(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_bridge.registry"):
        assert registry.dynamic() == {}
    assert caplog.records == []


def test_a_write_refuses_a_corrupt_file_and_leaves_its_bytes_untouched(registry: Registry) -> None:
    registry.path.parent.mkdir(parents=True)
    registry.path.write_bytes(b'{"servers": {"precious": ')
    with pytest.raises(BridgeError) as caught:
        registry.add("alpha", OTHER)
    assert caught.value.code == "registry_error"
    assert caught.value.retryable is False
    assert registry.path.read_bytes() == b'{"servers": {"precious": '


def test_a_removal_refuses_a_corrupt_file_and_leaves_its_bytes_untouched(registry: Registry) -> None:
    registry.path.parent.mkdir(parents=True)
    registry.path.write_bytes(b"garbage")
    with pytest.raises(BridgeError) as caught:
        registry.remove("alpha")
    assert caught.value.code == "registry_error"
    assert registry.path.read_bytes() == b"garbage"


# -- legacy path -----------------------------------------------------------------------------

OLD = {"old": {"transport": "http", "url": "https://old.example/mcp"}}
PLANTED_LATER = {"planted": {"transport": "http", "url": "https://evil.example/mcp"}}


def test_the_legacy_file_is_read_when_the_canonical_file_is_missing(
    paths: tuple[Path, Path], make_registry: MakeRegistry
) -> None:
    write_registry_file(paths[1], OLD)
    registry = make_registry()
    assert registry.get("old").url == "https://old.example/mcp"
    assert registry.merged()["old"][1] == "dynamic"


def test_the_legacy_file_is_ignored_once_the_canonical_file_exists(
    paths: tuple[Path, Path], make_registry: MakeRegistry
) -> None:
    write_registry_file(paths[0], {"new": {"transport": "http", "url": "https://new.example/mcp"}})
    write_registry_file(paths[1], OLD)
    assert set(make_registry().dynamic()) == {"new"}


def test_the_next_write_goes_only_to_the_canonical_file_and_keeps_legacy_entries(
    paths: tuple[Path, Path], make_registry: MakeRegistry
) -> None:
    legacy_bytes = write_registry_file(paths[1], OLD)
    registry = make_registry()
    registry.add("new", OTHER)
    assert set(json.loads(registry.path.read_text())["servers"]) == {"old", "new"}
    assert registry.legacy_path.read_bytes() == legacy_bytes
    assert temp_files(registry.legacy_path.parent) == []


def test_a_legacy_file_created_after_start_is_never_read(registry: Registry) -> None:
    # The legacy path lies in the workspace, where sandboxed children may write.
    write_registry_file(registry.legacy_path, PLANTED_LATER)
    assert registry.dynamic() == {}
    registry.add("new", OTHER)
    assert set(registry.dynamic()) == {"new"}


def test_a_legacy_file_changed_after_start_is_never_read(paths: tuple[Path, Path], make_registry: MakeRegistry) -> None:
    write_registry_file(paths[1], OLD)
    registry = make_registry()
    write_registry_file(paths[1], PLANTED_LATER)
    assert set(registry.dynamic()) == {"old"}


# -- file discipline -------------------------------------------------------------------------


def test_the_written_file_is_private_to_its_owner(registry: Registry) -> None:
    registry.add("alpha", HttpServerSpec(url="https://a.example/mcp", headers={"Authorization": "Bearer s"}))
    assert stat.S_IMODE(registry.path.stat().st_mode) == 0o600


def test_a_rewrite_keeps_the_file_private_even_if_it_was_widened(registry: Registry) -> None:
    registry.add("alpha", OTHER)
    registry.path.chmod(0o644)
    registry.add("beta", OTHER)
    assert stat.S_IMODE(registry.path.stat().st_mode) == 0o600


def test_writes_leave_no_temp_files_behind(registry: Registry) -> None:
    registry.add("alpha", OTHER)
    registry.add("alpha", DYNAMIC_DOCS)
    registry.add("docs", DYNAMIC_DOCS)
    registry.remove("alpha")
    assert temp_files(registry.path.parent) == []
    assert set(os.listdir(registry.path.parent)) - {"servers.json.lock"} == {"servers.json"}


def test_the_file_is_valid_json_with_a_version(registry: Registry) -> None:
    registry.add("alpha", OTHER)
    data = json.loads(registry.path.read_text())
    assert data["version"] == 1
    assert data["servers"]["alpha"]["url"] == OTHER.url


# -- lock ------------------------------------------------------------------------------------


@pytest.fixture
def held_lock(registry: Registry, monkeypatch: pytest.MonkeyPatch):
    """Hold the registry's lock as another writer would, with a short wait for the registry."""
    monkeypatch.setattr(registry_module, "LOCK_TIMEOUT_S", 0.3)
    registry.path.parent.mkdir(parents=True, exist_ok=True)
    lock = portalocker.Lock(
        str(registry.path) + ".lock", mode="a", timeout=0, flags=portalocker.LOCK_EX | portalocker.LOCK_NB
    )
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def test_a_held_lock_makes_a_write_fail_with_a_retryable_registry_error(registry: Registry, held_lock) -> None:
    with pytest.raises(BridgeError) as caught:
        registry.add("alpha", OTHER)
    assert caught.value.code == "registry_error"
    assert caught.value.retryable is True
    assert not registry.path.exists()


def test_a_write_succeeds_once_the_lock_is_released(registry: Registry, held_lock) -> None:
    held_lock.release()
    assert registry.add("alpha", OTHER) is False
    assert "alpha" in registry.dynamic()


def test_a_held_lock_does_not_block_reads(registry: Registry, held_lock) -> None:
    write_registry_file(registry.path, {"alpha": {"transport": "http", "url": "https://a.example/mcp"}})
    assert set(registry.dynamic()) == {"alpha"}


# -- a crash between the temp file and the replace -------------------------------------------


def before_replace(monkeypatch: pytest.MonkeyPatch, hook: Callable[[Path], None]) -> None:
    """Run `hook(temp)` once the temp file is complete and fsynced, just before it replaces the file."""

    def replace(temp: Path, path: Path) -> None:
        hook(temp)
        os.replace(temp, path)

    monkeypatch.setattr(json_file, "_replace", replace)


def test_the_new_content_is_complete_in_the_temp_file_before_the_replace(
    make_registry: MakeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[dict[str, Any], int]] = []

    def inspect(temp: Path) -> None:
        seen.append((json.loads(temp.read_text()), stat.S_IMODE(temp.stat().st_mode)))

    registry = make_registry()
    before_replace(monkeypatch, inspect)
    registry.add("alpha", OTHER)
    [(content, mode)] = seen
    assert set(content["servers"]) == {"alpha"}
    assert mode == 0o600
    assert set(registry.dynamic()) == {"alpha"}


def test_a_failure_before_the_replace_leaves_the_old_registry_and_no_temp_file(
    registry: Registry, make_registry: MakeRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry.add("alpha", OTHER)
    before = registry.path.read_bytes()

    def crash(temp: Path) -> None:
        raise RuntimeError("simulated crash before os.replace")

    crashing = make_registry()
    before_replace(monkeypatch, crash)
    with pytest.raises(RuntimeError, match="simulated crash"):
        crashing.add("beta", OTHER)
    assert registry.path.read_bytes() == before
    assert temp_files(registry.path.parent) == []
    with pytest.raises(RuntimeError, match="simulated crash"):
        crashing.remove("alpha")
    assert registry.path.read_bytes() == before


# -- developer-only fields -------------------------------------------------------------------

PRIVILEGED = {
    "transport": "stdio",
    "command": "/bin/sh",
    "args": [],
    "env": {"INJECTED": "1"},
    "network": ["Registry.NPMJS.org", "*.example.com"],
    "read_paths": ["/opt/models"],
    "write_paths": ["/usr/local/bin"],
    "git_write_paths": ["/srv/repo"],
}
WIDENING = {"env": {"INJECTED": "1"}, "network": "allow", "read_paths": ["/opt/models"],
            "write_paths": ["/usr/local/bin"], "git_write_paths": ["/srv/repo"]}  # fmt: skip


def test_the_config_layer_may_grant_every_developer_only_field(make_registry: MakeRegistry) -> None:
    spec = make_registry(config={"granted": PRIVILEGED}).get("granted")
    assert isinstance(spec, StdioServerSpec)
    assert spec.network == ("*.example.com", "registry.npmjs.org")  # a domain list, normalised
    assert (spec.env, spec.read_paths, spec.write_paths, spec.git_write_paths) == (
        {"INJECTED": "1"}, ("/opt/models",), ("/usr/local/bin",), ("/srv/repo",)
    )  # fmt: skip


@pytest.mark.parametrize("which", ["canonical", "legacy"])
@pytest.mark.parametrize("field", sorted(WIDENING))
def test_the_dynamic_file_cannot_grant_a_developer_only_field(
    paths: tuple[Path, Path], make_registry: MakeRegistry, which: str, field: str
) -> None:
    plain = {"transport": "stdio", "command": "/bin/sh", "args": []}
    write_registry_file(paths[0] if which == "canonical" else paths[1], {"plain": plain, "planted": plain | {field: WIDENING[field]}})
    registry = make_registry()
    listed, warning = registry.listing()
    assert "planted" not in listed and "plain" not in listed  # the whole file is refused, not patched
    assert warning is not None and f"developer-only fields ({field})" in warning


def test_a_plain_dynamic_entry_beside_no_widening_is_served(paths: tuple[Path, Path], make_registry: MakeRegistry) -> None:
    """Positive twin: the same file without the developer-only field is read."""
    write_registry_file(paths[0], {"plain": {"transport": "stdio", "command": "/bin/sh", "args": []}})
    assert "plain" in make_registry().dynamic()


def test_a_network_list_with_an_ip_address_is_refused_in_config(make_registry: MakeRegistry) -> None:
    with pytest.raises(ValueError, match="IP addresses are not accepted"):
        make_registry(config={"bad": PRIVILEGED | {"network": ["10.0.0.1"]}})


@pytest.mark.parametrize(
    "plant",
    [
        lambda path: os.mkfifo(path),
        lambda path: path.symlink_to("/dev/zero"),
        lambda path: path.write_bytes(b"[" * 2_000_000),
    ],
    ids=["fifo", "symlink-to-dev-zero", "huge"],
)
def test_a_hostile_legacy_plant_is_a_warning_never_a_hang_or_a_crash(
    paths: tuple[Path, Path], make_registry: MakeRegistry, plant: Callable[[Path], None]
) -> None:
    paths[1].parent.mkdir(parents=True)
    plant(paths[1])
    registry = make_registry(config={})
    listed, warning = registry.listing()
    assert listed == {} and warning is not None and "cannot be read" in warning
    registry.ensure_canonical()  # a start with the plant in place: warned, not created, never hung
    assert not paths[0].exists()


def test_a_legacy_file_behind_a_symlink_is_not_adopted(paths: tuple[Path, Path], make_registry: MakeRegistry) -> None:
    real = write_registry_file(paths[1].with_name("elsewhere.json"), OLD)
    assert real
    paths[1].symlink_to(paths[1].with_name("elsewhere.json"))
    assert make_registry().dynamic() == {}
