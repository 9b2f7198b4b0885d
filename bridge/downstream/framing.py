"""Newline-delimited JSON-RPC, the stdio wire of both faces: the host's stdin/stdout and each child's.

`LineFramer` splits a byte stream into lines without rescanning what it already searched, and
holds at most `max_bytes` of an unfinished line; `encode` writes one message as one line.
"""

from __future__ import annotations

from mcp.shared.message import SessionMessage

# One message from a downstream server, on any transport: a stdout line, a JSON body, an SSE event.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class LineTooLong(Exception):
    """An unfinished line grew past the framer's cap."""


class LineFramer:
    """Feed bytes in, get whole lines out (without their newline)."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self._buffer = bytearray()
        self._max = max_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        start = len(self._buffer)  # only the new bytes can hold the next newline
        self._buffer += chunk
        lines = []
        while (end := self._buffer.find(b"\n", start)) >= 0:
            lines.append(bytes(self._buffer[:end]))
            del self._buffer[: end + 1]
            start = 0
        if self._max is not None and len(self._buffer) > self._max:
            raise LineTooLong(f"a line is longer than {self._max} bytes")
        return lines

    def rest(self) -> bytes:
        """What is left when the stream ends: a last line without its newline."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest


def encode(message: SessionMessage) -> bytes:
    """One message as one wire line."""
    return (message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")
