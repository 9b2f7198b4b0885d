"""Tool search: ranking quality beside plain BM25, and time.

Prints, for the public development set (`tests/data/toolsearch-dev`) and the validation set built
apart from it (`tests/data/toolsearch-val`): recall@1, recall@5 and MRR of the bridge's ranking
beside plain BM25 (one field of name, description and parameter names; words as `[a-z0-9]+`, no
stemming; k1 1.2, b 0.75). Then the time of a search over 2,500 indexed tools, cold (a new process,
first search) and warm, and of a first index of 70 HTTP servers through the bridge
(`--servers 0` skips that part).

    .venv/bin/python bench/bench_search.py [--servers 70]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import mcp_types as types

from bridge.store.catalog import Catalog
from bridge.tools import search

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = ("toolsearch-dev", "toolsearch-val")


def load(name: str) -> tuple[dict[str, list[types.Tool]], list[dict[str, Any]]]:
    corpus = json.loads((DATA / name / "corpus.json").read_text())["servers"]
    servers = {
        server: [
            types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"] or {"type": "object"})
            for t in tools
        ]
        for server, tools in corpus.items()
    }
    queries = [json.loads(line) for line in (DATA / name / "queries.jsonl").read_text().splitlines() if line.strip()]
    return servers, queries


def bridge_ranking(servers: dict[str, list[types.Tool]], folder: Path) -> Any:
    catalog = Catalog(folder / "index.sqlite3", search.VERSION)
    for server, tools in servers.items():
        catalog.put(server, "bench", [search.document(server, tool) for tool in tools])
    weights = list(search.WEIGHTS.values())

    def rank(query: str) -> list[str]:
        match = search.match_expression(query)
        hits = catalog.search(match, list(servers), weights, 50) if match else []
        return [f"{hit.server}:{hit.tool}" for hit in hits]

    return rank


def plain_bm25(servers: dict[str, list[types.Tool]]) -> Any:
    def words(text: str) -> list[str]:
        return re.findall(r"[a-z0-9]+", text.lower())

    docs = {}
    for server, tools in servers.items():
        for tool in tools:
            params = " ".join((tool.input_schema or {}).get("properties", {}))
            docs[f"{server}:{tool.name}"] = Counter(words(f"{tool.name} {tool.description or ''} {params}"))
    lengths = {key: sum(doc.values()) for key, doc in docs.items()}
    average = sum(lengths.values()) / len(lengths)
    frequency = Counter(word for doc in docs.values() for word in doc)
    idf = {word: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for word, n in frequency.items()}

    def rank(query: str) -> list[str]:
        terms = set(words(query))
        scores = {
            key: sum(
                idf[t] * doc[t] * 2.2 / (doc[t] + 1.2 * (0.25 + 0.75 * lengths[key] / average)) for t in terms if t in doc
            )
            for key, doc in docs.items()
        }
        return [key for key, score in sorted(scores.items(), key=lambda kv: -kv[1]) if score > 0]

    return rank


def quality(rank: Any, queries: list[dict[str, Any]]) -> dict[str, float]:
    """recall@k: a tool graded best (2) is in the first k; MRR: of the first tool graded at all."""
    at1 = at5 = reciprocal = 0.0
    for query in queries:
        ranked = rank(query["query"])
        best = {key for key, grade in query["relevance"].items() if grade == 2}
        relevant = set(query["relevance"])
        at1 += bool(best & set(ranked[:1]))
        at5 += bool(best & set(ranked[:5]))
        first = next((i for i, key in enumerate(ranked) if key in relevant), None)
        reciprocal += 0 if first is None else 1 / (first + 1)
    n = len(queries)
    return {"recall@1": at1 / n, "recall@5": at5 / n, "MRR": reciprocal / n}


def synthetic(count: int) -> dict[str, list[types.Tool]]:
    """`count` tools over 70 servers: the two sets' tools, renamed, over and over."""
    pool = [tool for name in SETS for tools in load(name)[0].values() for tool in tools]
    servers: dict[str, list[types.Tool]] = {}
    for i in range(count):
        tool = pool[i % len(pool)]
        servers.setdefault(f"server{i % 70}", []).append(tool.model_copy(update={"name": f"{tool.name}_{i}"}))
    return servers


def search_times(folder: Path) -> tuple[float, float, float]:
    """Cold (median over fresh processes, first search) and warm median, ms; and the tool count."""
    servers = synthetic(2500)
    catalog = Catalog(folder / "index.sqlite3", search.VERSION)
    for server, tools in servers.items():
        catalog.put(server, "bench", [search.document(server, tool) for tool in tools])
    catalog.close()
    cold = [
        float(subprocess.check_output([sys.executable, __file__, "--cold", str(folder)], text=True))
        for _ in range(5)
    ]
    catalog = Catalog(folder / "index.sqlite3", search.VERSION)
    weights, names = list(search.WEIGHTS.values()), list(servers)
    queries = [q["query"] for name in SETS for q in load(name)[1]]
    warm = []
    for query in queries:
        started = time.perf_counter()
        catalog.search(search.match_expression(query) or '""', names, weights, 10)
        warm.append((time.perf_counter() - started) * 1000)
    return statistics.median(cold), statistics.median(warm), sum(len(t) for t in servers.values())


def cold_search(folder: str) -> None:
    """In a fresh process: open the kept index and answer one query, timed (what a first search costs)."""
    started = time.perf_counter()
    catalog = Catalog(Path(folder) / "index.sqlite3", search.VERSION)
    servers = list(catalog.parts())
    catalog.search(search.match_expression("read the text of a file") or "", servers, list(search.WEIGHTS.values()), 10)
    print((time.perf_counter() - started) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=70, help="HTTP servers to index first (0: skip)")
    parser.add_argument("--cold", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold:
        cold_search(args.cold)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for name in SETS:
            servers, queries = load(name)
            tools = sum(len(t) for t in servers.values())
            ours = quality(bridge_ranking(servers, Path(tmp) / name), queries)
            floor = quality(plain_bm25(servers), queries)
            print(f"{name}: {len(servers)} servers, {tools} tools, {len(queries)} queries")
            for metric in ours:
                print(f"  {metric:9} bridge {ours[metric]:.3f}   plain BM25 {floor[metric]:.3f}")
        cold, warm, count = search_times(Path(tmp) / "time")
        print(f"search over {count} tools: cold (new process, first search) {cold:.2f} ms, warm median {warm:.2f} ms")
        if args.servers:
            from bench_index import first_index

            print(first_index(args.servers, Path(tmp) / "index"))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
