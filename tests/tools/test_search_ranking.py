"""The ranking: identifiers split, words stemmed lightly, and on both the public development set and
the validation set built apart from it, better than plain BM25 on every measure."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from bridge.tools import search

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_search.py"


def bench():  # noqa: ANN201 - the bench module, loaded from its file
    spec = importlib.util.spec_from_file_location("bench_search", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_search"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["read_text_file", "readTextFile", "read-text-file", "ReadTEXTFile", "READ_TEXT_FILE"])
def test_identifiers_split_where_their_words_meet(name: str) -> None:
    assert search.words(name) == ["read", "text", "fil"]


@pytest.mark.parametrize(
    ("forms", "stem"),
    [
        (["create", "creates", "created", "creating"], "creat"),
        (["list", "lists", "listed", "listing"], "list"),
        (["directory", "directories"], "directory"),
        (["map", "mapped", "mapping"], "map"),
    ],
)
def test_word_forms_meet(forms: list[str], stem: str) -> None:
    assert {search.stem(form) for form in forms} == {stem}


def test_function_words_alone_look_for_nothing() -> None:
    assert search.match_expression("show me the") is not None  # `show` is a word
    assert search.match_expression("the of and") is None


@pytest.mark.parametrize("name", ["toolsearch-dev", "toolsearch-val"])
def test_the_ranking_beats_plain_bm25(name: str, tmp_path: Path) -> None:
    module = bench()
    servers, queries = module.load(name)
    ours = module.quality(module.bridge_ranking(servers, tmp_path), queries)
    floor = module.quality(module.plain_bm25(servers), queries)
    assert all(ours[metric] > floor[metric] for metric in ours), (ours, floor)
