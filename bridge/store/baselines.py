"""A server's drift baseline: the digests its tools had when first seen (compared by `bridge.tools.drift`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from bridge.models import Drift


class Baseline(BaseModel):
    """The digests a server's tools had when first seen, for one identity of the server.

    A server may list more tools to a host that can do more (elicit, sample, give roots), so the
    baseline is the server's full list as seen by every kind of host so far, with what each kind
    saw (`views`), and the change found so far (`drift`), which every host is shown.
    """

    identity: str = Field(description="Digest of where the server is (url, or command, args and cwd).")
    recorded_at: datetime
    tools: dict[str, str]
    views: dict[str, list[str]] = Field(
        default_factory=dict, description="The abilities a host had ('elicit_form+roots'; '' for none) -> the tools it saw first."
    )
    drift: Drift | None = None
