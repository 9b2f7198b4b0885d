"""Redaction of what a server quotes back: whole secrets, their words, and any piece of 8 or more
characters; a shorter coincidence is left alone, so messages stay readable."""

from __future__ import annotations

from bridge.downstream.redaction import redact
from bridge.errors import BridgeError

SECRET = "sk-live-0123456789abcdef"


def cleaned(message: str, *secrets: str) -> str:
    return redact(BridgeError("protocol_error", message, quoted=message), list(secrets)).message


def test_a_piece_of_eight_characters_is_redacted_wherever_it_appears() -> None:
    assert cleaned(f"token ...{SECRET[5:13]}... is invalid", SECRET) == "token ...[redacted]... is invalid"


def test_a_longer_piece_becomes_one_mark() -> None:
    assert cleaned(f"got {SECRET[2:20]}!", SECRET) == "got [redacted]!"


def test_seven_shared_characters_are_not_a_secret() -> None:
    assert cleaned(f"token {SECRET[5:12]} is invalid", SECRET) == f"token {SECRET[5:12]} is invalid"


def test_whole_values_words_and_url_quoted_forms_are_redacted() -> None:
    assert cleaned("sent Bearer%20abcd and abcd", "Bearer abcd") == "sent [redacted] and [redacted]"


def test_detail_strings_and_lists_are_redacted_too() -> None:
    error = BridgeError("child_exited", "exited", stderr_tail=[f"env has {SECRET}", "fine"], last=SECRET[:9])
    assert redact(error, [SECRET]).detail == {"stderr_tail": ["env has [redacted]", "fine"], "last": "[redacted]"}
