"""The four tools' schemas as `tools/list` carries them: only what a host checks and a model reads.

Every conversation pays for `tools/list` before its first word. Drawn in full from the pydantic
models, the four tools cost 12,491 characters, two thirds of them output schemas that spelled out
every success variant beside the error (3,793 characters for `mcp_list_tools` alone). So:
- an output schema is one object, the envelope every result shares: `ok`, then the fields of the
  tool's success shapes and of the error, each by its JSON type only (the result's text says the
  rest); real results still validate against it (`tests/host/test_shapes.py`);
- an optional parameter is advertised as its type alone: `anyOf [T, null]` with `default: null`
  says only that it may be left out, which leaving it out of `required` already says. A host that
  sends `null` anyway is still accepted: arguments are validated against the signature, not this.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from bridge.errors import ErrorResult


def envelope(*success: type[BaseModel]) -> dict[str, Any]:
    """One object schema admitting each success shape and the error shape: each field by type."""
    types: dict[str, set[str]] = {}
    for model in (*success, ErrorResult):
        for name, field in model.model_json_schema(mode="serialization")["properties"].items():
            types.setdefault(name, set()).update(_json_types(field))
    properties = {name: {"type": _one_or_list(kinds)} for name, kinds in types.items()}
    return {"type": "object", "properties": properties, "required": ["ok"]}


def lean_input(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each optional, nullable parameter shown as its type alone."""
    required = set(schema.get("required", ()))
    properties = {
        name: field if name in required else _without_null(field) for name, field in schema["properties"].items()
    }
    return {**schema, "properties": properties}


def _without_null(field: dict[str, Any]) -> dict[str, Any]:
    branches = field.get("anyOf")
    if branches is None or field.get("default", ...) is not None:
        return field
    kept = [branch for branch in branches if branch != {"type": "null"}]
    rest = {key: value for key, value in field.items() if key not in ("anyOf", "default")}
    return {**kept[0], **rest} if len(kept) == 1 else {"anyOf": kept, **rest}


def _json_types(field: dict[str, Any]) -> set[str]:
    """The JSON types a property takes, `null` aside (results leave out what is None)."""
    if "anyOf" in field:
        return set().union(*(_json_types(branch) for branch in field["anyOf"])) - {"null"}
    if "$ref" in field:  # a nested model
        return {"object"}
    return {field["type"]}


def _one_or_list(kinds: set[str]) -> str | list[str]:
    return next(iter(kinds)) if len(kinds) == 1 else sorted(kinds)
