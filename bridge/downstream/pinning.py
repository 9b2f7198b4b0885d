"""Connect-time SSRF check: resolve, judge every address, then dial the judged address only.

Judging a URL when it is registered is not enough: a name can resolve to a public address then
and to 127.0.0.1 or 169.254.169.254 a second later (DNS rebinding), and a redirect can name a new
host. So every request, each redirect hop included, goes through `PinnedTransport`: the host is
resolved here, every address it resolves to is judged (`bridge.ssrf.refusal`; one bad address
refuses the name), and the request is sent to the address itself with `Host` and TLS SNI kept on
the name, so what was judged is what is dialled. Nothing is dialled before the judgement.

Proxies from the environment are not used for these requests (`trust_env=False`): a proxy would
do its own lookup, past the judgement.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import anyio
import httpx2

from bridge.ssrf import Address, Reach, literal_address, name_refusal, refusal

# host, port -> the addresses it resolves to (tests pass their own).
Resolver = Callable[[str, int], Awaitable[list[str]]]


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class Refused(httpx2.ConnectError):
    """The target was judged and refused; nothing was dialled. A `ConnectError`, so the SDK ends
    the session as it would for an unreachable server, and the reason is kept for the error."""


class PinnedTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport that dials only addresses `reach` allows (see the module docstring)."""

    def __init__(self, reach: Reach, resolver: Resolver, on_refused: Callable[[str], None]) -> None:
        self._reach = reach
        self._resolve = resolver
        self._on_refused = on_refused
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)

    def _refuse(self, request: httpx2.Request, why: str) -> Refused:
        self._on_refused(why)
        return Refused(why, request=request)

    async def _judged(self, request: httpx2.Request) -> list[Address]:
        host = request.url.host.lower().rstrip(".")
        address = literal_address(host)
        if address is not None:
            candidates = [address]
        else:
            if (why := name_refusal(host, self._reach)) is not None:
                raise self._refuse(request, why)
            port = request.url.port or (443 if request.url.scheme == "https" else 80)
            try:
                found = await self._resolve(host, port)
            except OSError as exc:
                raise httpx2.ConnectError(f"cannot resolve {host}: {exc}", request=request) from None
            candidates = [a for a in map(literal_address, found) if a is not None]
        for candidate in candidates:
            if (why := refusal(candidate, self._reach)) is not None:
                named = f"{host} resolves to {why}" if str(candidate) != host else why
                raise self._refuse(request, named)
        return candidates

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        candidates = await self._judged(request)
        if not candidates:
            raise httpx2.ConnectError(f"{request.url.host} resolves to no address", request=request)
        last: httpx2.ConnectError | None = None
        for address in candidates:
            pinned = httpx2.Request(
                request.method,
                request.url.copy_with(host=str(address)),
                headers=request.headers,  # Host still names the name
                stream=request.stream,
                extensions={**request.extensions, "sni_hostname": request.url.host},
            )
            try:
                return await self._inner.handle_async_request(pinned)
            except httpx2.ConnectError as exc:  # try the next address, as a resolver-driven dial would
                last = exc
        assert last is not None
        raise last

    async def aclose(self) -> None:
        await self._inner.aclose()
