"""One line of stdin to a JSON-RPC message; a request the SDK's parser refuses is still answered.

The SDK parses each line with pydantic's JSON parser, which refuses a lone surrogate escape
(`"\\ud800"`) and nesting past its recursion limit; the SDK then drops the line, and a request on
it is never answered: the host waits until its own timeout. Here such a line gets a second reading:

- Python's parser takes lone surrogates: the message goes on as usual, and the tools' validation
  answers `invalid_argument` for the field that holds one (`bridge.tools.validation`);
- a line nested too deep for any parser, or JSON that is no valid message, is answered with a
  JSON-RPC error under the id read from its top level, when it has one and a method (a request);
  scanning the top level recurses into nothing, so no depth stops it;
- anything else (not JSON at all, a response, a notification) goes to the SDK as before.
"""

from __future__ import annotations

import json
from json.decoder import scanstring

import mcp_types
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, ErrorData, JSONRPCError
from pydantic import ValidationError

Inbound = SessionMessage | Exception

_ADAPTER = mcp_types.jsonrpc_message_adapter
_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"
PARSE_DEPTH = 900  # about where Python's parser stops (its recursion limit, 1000, less the stack in use)


class Refused(ValueError):
    """A request no parser can take, and the error that answers it."""

    def __init__(self, answer: JSONRPCError) -> None:
        super().__init__(answer.error.message)
        self.answer = SessionMessage(answer)


def parse_line(line: bytes) -> Inbound | Refused:
    """A message, a `Refused` request to answer at once, or why the line is no message."""
    text = line.decode("utf-8", errors="replace")
    try:
        return SessionMessage(_ADAPTER.validate_json(text, by_name=False))
    except ValidationError as exc:
        return _second_reading(text, exc)


def _second_reading(text: str, refused: ValidationError) -> Inbound | Refused:
    try:
        value = json.loads(text)
    except RecursionError:
        code, why = INVALID_PARAMS, f"Error [invalid_argument]: the request nests deeper than {PARSE_DEPTH} levels"
    except ValueError:
        return refused  # not JSON: no id can be read from it
    else:
        try:
            return SessionMessage(_ADAPTER.validate_python(value, by_name=False))
        except (ValidationError, RecursionError):
            code, why = INVALID_REQUEST, "Invalid Request: the line is JSON, but no valid JSON-RPC request"
    top = _top_level_scalars(text)
    request_id, method = top.get("id"), top.get("method")
    if not isinstance(method, str) or isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return refused
    return Refused(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=why)))


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in _SPACE:
        at += 1
    return at


def _top_level_scalars(text: str) -> dict[str, object]:
    """The members of the JSON object in `text` whose values are scalars, at its top level only,
    read without recursion (nested values are skipped by counting brackets outside strings)."""
    found: dict[str, object] = {}
    at = _skip_space(text, 0)
    if not text.startswith("{", at):
        return found
    at, depth, key_next = at + 1, 1, True
    try:
        while at < len(text):
            char = text[at]
            if char == '"' and depth == 1 and key_next:
                key, at = scanstring(text, at + 1)
                at = _skip_space(text, at)
                if not text.startswith(":", at):
                    return found
                at = _skip_space(text, at + 1)
                if at < len(text) and text[at] not in "{[":
                    found[key], at = _DECODER.raw_decode(text, at)
                key_next = False
                continue
            if char == '"':
                _, at = scanstring(text, at + 1)
                continue
            if char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
                if depth == 0:
                    break
            elif char == "," and depth == 1:
                key_next = True
            at += 1
    except ValueError:  # a broken string or scalar: what was read so far stands
        pass
    return found
