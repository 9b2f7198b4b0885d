"""A server's drift baseline: the digests its tools had when first seen (compared by `bridge.tools.drift`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class Baseline(BaseModel):
    """The digests a server's tools had when first seen, for one identity of the server."""

    identity: str = Field(description="Digest of where the server is (url, or command, args and cwd).")
    recorded_at: datetime
    tools: dict[str, str]
