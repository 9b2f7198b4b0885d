"""Where a server URL registered by the conversation may point: the judgement, pure.

A model (or a prompt injection it read) can register any URL, and the bridge then dials it from
the operator's machine. Three reaches, chosen per server by who registered it:

- `anywhere`: the developer's config and the CLI (the operator); nothing is refused.
- `no-metadata`: the conversation, when the bridge is not reachable from outside (stdio), or the
  operator allowed private targets (`MCP_HTTP_ALLOW_PRIVATE`). Cloud metadata services and
  link-local addresses are refused; loopback and private networks are not.
- `public`: the conversation, when the bridge is served over HTTP. Only public addresses, as
  `sandbox.addresses` judges them for the sandbox's proxy too: loopback, private, CGNAT, reserved
  and multicast are refused as well.

Every spelling of an address is brought to one form first (`127.1`, `2130706433`, `0x7f.1` as
`inet_aton` reads them; brackets, case, a trailing dot, IDNA). The address itself is judged by
`sandbox.addresses`, with any IPv4 address an IPv6 one embeds (mapped, compatible, 6to4, NAT64,
Teredo). The same judgement is made on the resolved addresses at connect time
(`bridge.downstream.http`), so a name that resolves somewhere else later (DNS rebinding) is
refused too.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Literal

import httpx2

from sandbox.addresses import Address, metadata_refusal, public_refusal

Reach = Literal["anywhere", "no-metadata", "public"]

METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
    }
)


def reach_for(registered_by: str, conversation_reach: Reach) -> Reach:
    """The reach of one server: the operator's servers reach anywhere, the conversation's what the face allows."""
    return "anywhere" if registered_by == "operator" else conversation_reach


def normalise_host(url: str) -> str:
    """The host `url` names, as the transport will look it up: ASCII (IDNA), lower case, no
    brackets, no trailing dot. Raises ValueError for a URL the transport cannot parse."""
    try:
        raw = httpx2.URL(url).raw_host
    except httpx2.InvalidURL as exc:
        raise ValueError(str(exc)) from None
    return raw.decode("ascii").lower().strip("[]").rstrip(".")


def literal_address(host: str) -> Address | None:
    """The address a host literal stands for in any spelling `getaddrinfo` accepts, else None."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])  # an IPv6 zone id is not part of the address
    except ValueError:
        pass
    if not host or not all(c in "0123456789abcdefx." for c in host) or not host[0].isdigit():
        return None  # a name, even one made of hex letters
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))  # 127.1, 2130706433, 0x7f.1, 0177.0.0.1
    except OSError:
        return None


def refusal(address: Address, reach: Reach) -> str | None:
    """Why `reach` forbids dialling `address`, or None when it may be dialled."""
    if reach == "anywhere":
        return None
    return public_refusal(address) if reach == "public" else metadata_refusal(address)


def name_refusal(host: str, reach: Reach) -> str | None:
    """Why `reach` forbids a host name before it is even resolved, or None. `host` is normalised."""
    if reach == "anywhere":
        return None
    if host in METADATA_NAMES:
        return f"{host} is a cloud metadata service"
    if reach == "public" and (host == "localhost" or host.endswith(".localhost")):
        return f"{host} is this machine (loopback)"
    return None


def url_refusal(url: str, reach: Reach) -> str | None:
    """Why `reach` forbids `url` as written (no DNS lookup), or None; the connect-time check
    judges what a name resolves to."""
    host = normalise_host(url)
    address = literal_address(host)
    return refusal(address, reach) if address is not None else name_refusal(host, reach)
