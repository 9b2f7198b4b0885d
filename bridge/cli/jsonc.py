"""JSON with comments and trailing commas (VS Code's JSONC), as hosts write their MCP configs."""

from __future__ import annotations

import re

_STRING = r'("(?:[^"\\]|\\.)*")'
_COMMENT = re.compile(_STRING + r"|//[^\n]*|/\*.*?\*/", re.S)
_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[}\]])")


def strip_jsonc(text: str) -> str:
    """JSON with comments and trailing commas (VS Code's JSONC) as plain JSON; strings are left alone."""
    text = _COMMENT.sub(lambda match: match.group(1) or " ", text)
    return _TRAILING_COMMA.sub(lambda match: match.group(1) or "", text)
