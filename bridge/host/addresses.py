"""Which names and addresses are this machine: for the bind address, `MCP_ALLOWED_HOSTS` and `Host`."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address literal (no port, brackets allowed)."""
    host = host.strip().lower().strip("[]").rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_host(header: str) -> bool:
    """Whether a `Host` header value (`name[:port]`, `[v6][:port]`) names this machine."""
    header = header.strip()
    if header.startswith("["):
        return is_loopback(header[1 : header.find("]")] if "]" in header else header)
    name, _, port = header.rpartition(":") if header.count(":") == 1 else (header, "", "")
    return (not port or port.isdigit()) and is_loopback(name)
