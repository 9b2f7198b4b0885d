"""Redaction: what a careless server quotes back of the bridge's secrets never reaches a message."""

from __future__ import annotations

from urllib.parse import quote

from bridge.errors import BridgeError


def redact(error: BridgeError, secrets: list[str]) -> BridgeError:
    """`error` on one line, without any of `secrets` (header values, each word of them, also URL-quoted),
    which a careless server may quote back in an error of its own."""
    words = {word for value in secrets for word in (value, *value.split()) if len(word) >= 4}
    forms = {form for word in words for form in (word, quote(word), quote(word, safe=""))}
    forms_longest_first = sorted(forms, key=len, reverse=True)

    def clean(text: str) -> str:
        for form in forms_longest_first:
            text = text.replace(form, "[redacted]")
        return " ".join(text.split())

    detail = {key: clean(value) if isinstance(value, str) else value for key, value in error.detail.items()}
    return BridgeError(error.code, clean(error.message), retryable=error.retryable, **detail)
