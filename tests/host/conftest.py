"""Fixtures every test of the host face shares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bridge_proc import workdirs


@pytest.fixture
def dirs() -> Iterator[dict[str, str]]:
    """A fresh workspace, state dir and homes dir, as the `MCP_*` settings a host passes."""
    with workdirs() as made:
        yield made
