"""Redaction: what a careless server quotes back of the bridge's secrets never reaches a message.

A server may quote a secret whole, one word of it ("Bearer <token>"), URL-quoted, or only a piece
("token abc123de... is invalid"). So besides whole values and words, every run of text that
shares 8 or more consecutive characters with a secret (in any of those forms) is replaced.
"""

from __future__ import annotations

from urllib.parse import quote

from bridge.errors import BridgeError

# The shortest piece of a secret that is redacted wherever it appears.
PIECE = 8
_MARK = "[redacted]"


def _forms(secrets: list[str]) -> set[str]:
    words = {word for value in secrets for word in (value, *value.split()) if len(word) >= 4}
    return {form for word in words for form in (word, quote(word), quote(word, safe=""))}


class Redactor:
    """Replaces the secrets' forms and every piece of them of `PIECE` characters or more."""

    def __init__(self, secrets: list[str]) -> None:
        forms = _forms(secrets)
        self._whole = sorted(forms, key=len, reverse=True)
        self._pieces = {form[i : i + PIECE] for form in forms for i in range(len(form) - PIECE + 1)}

    def clean(self, text: str) -> str:
        """`text` on one line, with no secret and no piece of one."""
        for form in self._whole:
            text = text.replace(form, _MARK)
        if self._pieces:
            hidden = [False] * len(text)
            for start in range(len(text) - PIECE + 1):
                if text[start : start + PIECE] in self._pieces:
                    hidden[start : start + PIECE] = [True] * PIECE
            text = "".join(
                _MARK if hide and (i == 0 or not hidden[i - 1]) else "" if hide else ch
                for i, (ch, hide) in enumerate(zip(text, hidden))
            )
        return " ".join(text.split())


def redact(error: BridgeError, secrets: list[str]) -> BridgeError:
    """`error` on one line, without any of `secrets` (header values, resolved `${env:}` values, a
    stdio server's env values), which a careless server may quote back in an error of its own."""
    redactor = Redactor(secrets)

    def clean(value: object) -> object:
        if isinstance(value, str):
            return redactor.clean(value)
        if isinstance(value, list):
            return [clean(item) for item in value]
        return value

    detail = {key: clean(value) for key, value in error.detail.items()}
    return BridgeError(error.code, redactor.clean(error.message), retryable=error.retryable, **detail)
