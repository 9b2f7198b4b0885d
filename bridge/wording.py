"""Words for people and models alike: "1 server", "2 servers"."""

from __future__ import annotations


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
