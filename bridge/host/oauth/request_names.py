"""Short names for pending consent requests ("amber-falcon"): the consent page, the log and
`mcp-bridge auth pending` all show one, so the owner types the code of the request on the screen.

A name is not a secret (the pairing code is); it only tells apart the few requests waiting at once.
"""

from __future__ import annotations

import secrets
from collections.abc import Container

_FIRST = (
    "amber", "azure", "bold", "brave", "brisk", "calm", "coral", "crisp", "dusky", "eager", "early", "fancy",
    "fleet", "frosty", "gentle", "gilded", "glad", "golden", "grand", "green", "hazel", "humble", "ivory", "jade",
    "jolly", "keen", "lemon", "lively", "lucky", "mellow", "misty", "noble", "olive", "pale", "plain", "proud",
    "quiet", "rapid", "rosy", "ruby", "rustic", "sandy", "scarlet", "silent", "silver", "sleek", "snowy", "solar",
    "spry", "steady", "stormy", "sunny", "swift", "tawny", "tidy", "topaz", "vivid", "violet", "warm", "wild",
    "windy", "wise", "young", "zesty",
)
_SECOND = (
    "badger", "beaver", "bison", "cedar", "comet", "condor", "crane", "delta", "dingo", "eagle", "ember", "falcon",
    "ferret", "finch", "fjord", "gecko", "glacier", "heron", "ibis", "island", "jackal", "koala", "lagoon", "lark",
    "lemur", "lynx", "maple", "marten", "meadow", "meteor", "moose", "nebula", "newt", "ocelot", "orca", "osprey",
    "otter", "panda", "pebble", "pelican", "pine", "plover", "puffin", "quail", "raven", "reef", "robin", "salmon",
    "spruce", "stork", "summit", "swan", "tapir", "thistle", "tiger", "trout", "tundra", "valley", "walrus",
    "willow", "wombat", "wren", "yak", "zebra",
)


def new_request_name(taken: Container[str]) -> str:
    """Two words (4,096 pairs), none of `taken`."""
    while True:
        name = f"{secrets.choice(_FIRST)}-{secrets.choice(_SECOND)}"
        if name not in taken:
            return name
