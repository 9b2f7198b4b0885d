"""The one judgement of an address: is it public, and if not, why not. Pure.

Two dialers ask it: the filtering proxy, before it connects a child to what a listed name resolves
to, and `bridge.ssrf`, before the bridge dials a server URL the conversation registered. Both ask
the same question, so one table answers it (the sandbox is a leaf: `bridge` imports this).

Not public: this machine (loopback, unspecified), link-local (cloud metadata lives there), cloud
metadata addresses outside it, private and unique-local networks, shared address space (CGNAT),
multicast, and the reserved, benchmarking, discard and local-use ranges. An IPv6 address that
carries an IPv4 address (mapped, compatible, 6to4, NAT64, Teredo) is judged by what it carries as
well, so `64:ff9b::a00:1` is 10.0.0.1; Teredo and the NAT64 local-use prefix are never public.

Spelled out rather than `ip.is_global`, which also refuses the documentation ranges
(192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32): some sandboxed CI networks map
every public name into one of them, and nothing inside a network lives there.
"""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud instance metadata services answer on these, whatever the network looks like.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
    )
)

# Inside a network, never on the internet (loopback and link-local are named by their own checks).
INTERNAL_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16",
    "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
    "::ffff:0:0:0/96",  # IPv4-translated (SIIT), not routed as such
    "64:ff9b:1::/48",  # NAT64 local use
    "100::/64",  # discard only
    "2001::/32",  # Teredo: a tunnel endpoint, never a registry or a server
    "2001:2::/48",  # benchmarking
    "fc00::/7", "fec0::/10", "ff00::/8",  # unique local, site-local (deprecated), multicast
))  # fmt: skip

NAT64 = ipaddress.ip_network("64:ff9b::/96")
COMPATIBLE = ipaddress.ip_network("::/96")  # IPv4-compatible (deprecated); :: and ::1 are not


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries: mapped, 6to4, Teredo (server, client),
    NAT64 and IPv4-compatible."""
    found = [a for a in (address.ipv4_mapped, address.sixtofour) if a is not None]
    if address.teredo:
        found += list(address.teredo)
    if address in NAT64 or (address in COMPATIBLE and int(address) > 1):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return found


def metadata_refusal(address: Address) -> str | None:
    """Why `address` reaches a cloud metadata service or a link-local network, or None."""
    if isinstance(address, ipaddress.IPv6Address):
        for inner in embedded_ipv4(address):
            why = metadata_refusal(inner)
            if why is not None:
                return why
    if address in METADATA_ADDRESSES:
        return f"{address} is a cloud metadata service"
    if address.is_link_local:
        return f"{address} is a link-local address"
    return None


def public_refusal(address: Address) -> str | None:
    """Why `address` is not public (names the address judged), or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        for inner in embedded_ipv4(address):
            why = public_refusal(inner)
            if why is not None:
                return why
    why = metadata_refusal(address)
    if why is not None:
        return why
    if address.is_loopback or address.is_unspecified:
        return f"{address} is this machine (loopback)"
    if any(address in net for net in INTERNAL_NETWORKS if net.version == address.version):
        return f"{address} is a private or reserved address"
    return None


def is_public(address: str) -> bool:
    """An address as a resolver returns it (an IPv6 zone id allowed) is public."""
    return public_refusal(ipaddress.ip_address(address.split("%", 1)[0])) is None
