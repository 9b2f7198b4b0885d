"""Words for people and models alike: "1 server", "2 servers", and foreign text shown safely.

Every string the bridge did not write itself (a downstream's tool names and descriptions, a URL
it sends, a child's CONNECT host, a stranger's OAuth client name) reaches the model's text, the
owner's terminal and the logs only through these helpers, so that none of them can forge a line,
move the cursor, clear a screen, ring a bell or reverse the text around it:

- `escaped(text)`: every character Python would not print (C0 and C1 controls, DEL, ESC, BEL, CR,
  LF, tab, bidi overrides and isolates such as U+202E, zero-width and tag characters, line and
  paragraph separators, lone surrogates, unassigned code points) becomes a visible escape (`\\n`,
  `\\x1b`, `\\u202e`, `\\udc80`). Spaces, the zero-width joiners that scripts and emoji need, and
  backslashes stay as they are, so escaping twice changes nothing.
- `escaped_lines(text)`: text whose line breaks the bridge wrote (its JSON, a traceback), each
  line escaped.
- `one_line(text, limit)`: prose (a description, a message) with its whitespace runs folded to one
  space, escaped, and cut to `limit` characters with an ellipsis.
- `quoted(text)` / `shown_name(name)`: a value inside single quotes that it cannot close.
- `OneLineFormatter` / `log_to_stderr`: every log record's message escaped onto one line.
"""

from __future__ import annotations

import logging
import sys
import unicodedata

# Spaces (no-break ones too) stay; ZWNJ/ZWJ join Persian, Indic and emoji. They forge no line.
_KEPT = frozenset("\u200c\u200d")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ELLIPSIS = "…"
NAME_LIMIT = 128


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _escape_char(ch: str) -> str:
    if ch in _KEPT or ch.isprintable() or unicodedata.category(ch) == "Zs":
        return ch
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escaped(text: str) -> str:
    """`text` with every unprintable character shown as a visible escape; one line always."""
    if text.isprintable():
        return text
    return "".join(_escape_char(ch) for ch in text)


def escaped_lines(text: str) -> str:
    """Text whose line breaks are the bridge's own (its JSON, a traceback): each line escaped."""
    return "\n".join(escaped(line) for line in text.split("\n"))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + _ELLIPSIS


def one_line(text: str | None, limit: int | None = None) -> str:
    """Prose on one line: whitespace runs folded to a space, the rest escaped, cut to `limit`."""
    text = escaped(" ".join((text or "").split()))
    return text if limit is None else _cut(text, limit)


def quoted(text: str, limit: int | None = None) -> str:
    """`text` escaped inside single quotes it cannot close (a quote inside shows as `\\'`)."""
    text = escaped(text).replace("'", "\\'")
    return f"'{text if limit is None else _cut(text, limit)}'"


def shown_name(name: str, limit: int = NAME_LIMIT) -> str:
    """A foreign name (a tool, a server, a client) as the bridge shows it: exact when it is plain,
    otherwise escaped; never longer than `limit` characters."""
    return _cut(escaped(name), limit)


class OneLineFormatter(logging.Formatter):
    """Each record's message escaped onto one line; a traceback keeps its lines, each escaped
    (whichever handler formatted it first: logging caches the traceback's text on the record)."""

    def format(self, record: logging.LogRecord) -> str:
        saved = record.msg, record.args
        record.msg, record.args = escaped(record.getMessage()), None
        try:
            text = super().format(record)
        finally:
            record.msg, record.args = saved
        return escaped_lines(text)


def log_to_stderr(level: int, fmt: str) -> None:
    """Logging to stderr (stdout is the protocol in stdio mode) through `OneLineFormatter`; like
    `logging.basicConfig`, it leaves a logger that already has handlers alone."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter(fmt))
    logging.basicConfig(level=level, handlers=[handler])
