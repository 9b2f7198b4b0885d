"""The kept catalog index: parts keyed on their entry, replaced whole, dropped, expired; rebuilt when
it is not a database or holds another analysis; written by several processes at once."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.models import HttpServerSpec, StdioServerSpec
from bridge.store.catalog import Catalog, Document, entry_key

WEIGHTS = [1.0] * 5


def doc(tool: str, description: str) -> Document:
    return Document(tool=tool, definition=f'{{"name": "{tool}"}}', fields={"name": tool, "description": description})


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    made = Catalog(tmp_path / "catalog" / "index.sqlite3", version=1)
    yield made
    made.close()


def test_a_part_is_replaced_whole_and_searched_best_first(catalog: Catalog) -> None:
    catalog.put("a", "k1", [doc("one", "read file"), doc("two", "write file")])
    catalog.put("a", "k2", [doc("three", "read read file")])
    assert [hit.tool for hit in catalog.search('"read"', ["a"], WEIGHTS, 10)] == ["three"]
    assert catalog.parts()["a"].entry == "k2"
    catalog.put("b", "k", [doc("four", "read")])
    assert [hit.server for hit in catalog.search('"read"', ["b"], WEIGHTS, 10)] == ["b"]
    assert catalog.search('"read"', [], WEIGHTS, 10) == []


def test_drop_and_expire(catalog: Catalog) -> None:
    catalog.put("a", "k", [doc("one", "x")], ttl_s=60)
    part = catalog.parts()["a"]
    assert part.expires_at is not None and part.expires_at > part.listed_at
    catalog.expire("a")
    assert catalog.parts()["a"].expires_at == 0
    catalog.drop(["a"])
    assert catalog.parts() == {} and catalog.search('"x"', ["a"], WEIGHTS, 10) == []


def test_the_file_is_private_and_rebuilt_when_it_is_not_an_index(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    path.write_bytes(b"not a database" * 100)
    catalog = Catalog(path, version=1)
    catalog.put("a", "k", [doc("one", "x")])
    assert path.stat().st_mode & 0o777 == 0o600
    catalog.close()
    newer = Catalog(path, version=2)  # another analysis: what was kept is not searched
    assert newer.parts() == {}
    newer.close()


def test_the_entry_key_changes_with_the_entry_not_with_who_added_it() -> None:
    spec = HttpServerSpec(transport="http", url="https://example.com/mcp", headers={"Authorization": "${env:TOKEN}"})
    key = entry_key("a", spec)
    assert key == entry_key("a", spec.model_copy(update={"registered_by": "operator"}))
    assert key != entry_key("b", spec)
    assert key != entry_key("a", spec.model_copy(update={"url": "https://example.com/other"}))
    stdio = StdioServerSpec(transport="stdio", command="/bin/echo", args=("x",))
    assert entry_key("a", stdio) != entry_key("a", stdio.model_copy(update={"args": ("y",)}))


WRITER = """
import sys
from pathlib import Path
from bridge.store.catalog import Catalog, Document
catalog = Catalog(Path(sys.argv[1]), version=1)
for i in range(30):
    name = f"{sys.argv[2]}{i}"
    catalog.put(name, "k", [Document(tool="t", definition="{}", fields={"name": "shared word"})])
"""


def test_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), prefix]) for prefix in ("p", "q", "r")]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0]
    catalog = Catalog(path, version=1)
    assert len(catalog.parts()) == 90
    assert len(catalog.search('"shared"', list(catalog.parts()), WEIGHTS, 100)) == 90
    catalog.close()
