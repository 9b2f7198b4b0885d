"""How a tool is matched to a query: the text analysis and field weights behind the kept index.

Ranking is BM25 over fields (SQLite FTS5's `bm25()`, one weight a field), on text analysed the same
way for tools and queries:
- identifiers split where their words meet: `read_text_file`, `readTextFile`, `read-text-file`
  and `ReadTEXTFile` all give `read text file`;
- English function words dropped, the rest stemmed lightly (plurals, -ing, -ed, a final e), so
  `listing`, `lists` and `listed` meet `list`;
- fields weighed by how much a word there says: the tool's name most, then the server's name,
  the description, the parameters' names and descriptions;
- a `related` field of the common words tool catalogs use for the same act or thing (`delete`,
  `remove`, `erase`; `folder`, `directory`), weighed low, so a query in other words than the
  description's still finds the tool, and the description's own words still win.
No model, no download: everything here is plain text work.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types as types

from bridge.store.catalog import COLUMNS, Document

# Bump when the analysis changes: kept indexes of another version are rebuilt.
VERSION = 1

WEIGHTS: Mapping[str, float] = {
    "name": 3.0,
    "description": 1.0,
    "parameters": 0.5,
    "server_name": 1.5,
    "related": 0.5,
}
assert tuple(WEIGHTS) == COLUMNS

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_STOP = frozenset(
    """a about above after again all also am an and any are as at be because been being below between
    both but by can could did do does doing down during each either every few for from further had has
    have having he her here hers him his how i if in into is it its itself just me more most my no nor
    not of off on once only or other our ours out over own please same she should so some such than
    that the their theirs them then there these they this those through to too under until up upon
    us very via was we were what when where which while who whom why will with would you your yours
    want need needs like me let lets give""".split()
)
# Words tool catalogs use for the same act or thing; each group is indexed as one extra term.
_RELATED = (
    "get fetch retrieve obtain read show view display load return",
    "list enumerate browse",
    "create make add new insert generate",
    "delete remove erase destroy drop trash purge",
    "update edit modify change alter patch replace",
    "search find query lookup look locate seek filter",
    "write save store put persist",
    "folder directory dir",
    "file document doc",
    "run execute exec invoke launch start call",
    "stop halt kill terminate cancel abort end",
    "send post deliver message notify",
    "move rename relocate",
    "copy duplicate clone",
    "picture image photo screenshot",
    "url link webpage website page site web",
    "user person member people account",
    "issue ticket bug",
    "repo repository",
    "summary summarize overview",
    "time date clock",
)


def stem(word: str) -> str:
    """A light stem: plural, -ing, -ed, then a final e (so `create`, `creates`, `created`, `creating`
    all give `creat`). Short words and those without a vowel left are kept as they are."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        root = word[: -len(suffix)]
        if word.endswith(suffix) and len(root) >= 3 and any(vowel in root for vowel in "aeiouy"):
            word = root[:-1] if len(root) > 3 and root[-1] == root[-2] and root[-1] not in "lsz" else root
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


_GROUP_OF = {stem(word): f"rel{index}" for index, group in enumerate(_RELATED) for word in group.split()}


def words(text: str | None) -> list[str]:
    """The text's words, identifiers split, lowercased, function words dropped, stemmed."""
    found = (match.lower() for match in _WORD.findall(text or ""))
    return [stem(word) for word in found if word not in _STOP]


def related(stems: Iterable[str]) -> list[str]:
    return [_GROUP_OF[word] for word in stems if word in _GROUP_OF]


def _parameters(schema: Mapping[str, Any] | None) -> str:
    """The names and descriptions of a schema's top-level parameters."""
    properties = (schema or {}).get("properties")
    if not isinstance(properties, Mapping):
        return ""
    parts: list[str] = []
    for name, field in properties.items():
        parts.append(str(name))
        if isinstance(field, Mapping) and isinstance(field.get("description"), str):
            parts.append(field["description"])
    return " ".join(parts)


def document(server: str, tool: types.Tool) -> Document:
    """The tool as the index keeps it: its definition and its analysed fields."""
    name = words(tool.name) + words(tool.title)
    description = words(tool.description)
    return Document(
        tool=tool.name,
        definition=tool.model_dump_json(by_alias=True, exclude_none=True),
        fields={
            "name": " ".join(name),
            "description": " ".join(description),
            "parameters": " ".join(words(_parameters(tool.input_schema))),
            "server_name": " ".join(words(server)),
            "related": " ".join(related(name + description)),
        },
    )


def match_expression(query: str) -> str | None:
    """The FTS5 expression for a query: any of its analysed words (BM25 weighs them); None when
    the query holds no word to look for."""
    stems = words(query)
    terms = list(dict.fromkeys([*stems, *related(stems)]))
    return " OR ".join(json.dumps(term) for term in terms) or None
