"""The filtering proxy: the only way out for a child whose network is a host list.

An HTTP CONNECT proxy with one route per allowlist (`ProxyRoute`). On Linux a route is a Unix
socket that the launch binds into the sandbox (`forwarder.py` relays the child's loopback
connections to it). On macOS it is a 127.0.0.1 TCP port of its own (`loopback_route`), the one
address the child's Seatbelt profile lets it connect to: a child of one server can never use
another server's wider list, because it cannot reach that list's port. A CONNECT is judged by
host NAME before anything is resolved or dialled:

- the name must be on the route's list (exact, or `*.domain` for its subdomains), and the port
  443 or 80; IP literals are refused outright;
- then it is resolved, and refused if any address is not public (`sandbox.addresses`, the
  judgement `bridge.ssrf` makes too): a listed name pointing inside the network reaches nothing;
- the proxy dials the address it vetted, so a second lookup cannot swap it (DNS rebinding).

Refusals answer `403` with a one-line reason and are kept per route (`denials`) so the bridge can
say which host a failing server tried. The bridge runs one `FilteringProxy` on its worker loop
(`serve` is a service) and calls `listen(route)` before each proxied spawn.

It survives its children: a child holds at most MAX_CONNECTIONS_PER_CHILD connections at once
(told apart by the peer's pid on a Unix route, by route on a loopback port; the rest are answered
`503`), a connection that fails in any way ends alone, and running out of descriptors on accept
ends the one waiting connection (with a spare descriptor kept for that), never the proxy. Each
bridge process keeps its sockets in its own folder, `<proxy_dir>/<pid>/`, so two bridges never
remove each other's; the folders of bridges that died are swept when a proxy first listens.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import ipaddress
import logging
import os
import shutil
import socket
import stat
import struct
import threading
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

import anyio
from anyio.abc import ByteStream, SocketAttribute, SocketListener, SocketStream, TaskGroup, TaskStatus

from sandbox.addresses import is_public
from sandbox.leftovers import pid_alive

log = logging.getLogger("mcp_bridge.sandbox.proxy")

ALLOWED_PORTS = (443, 80)
HEAD_LIMIT = 8192
HEAD_TIMEOUT_S = 10
CONNECT_TIMEOUT_S = 15
DENIALS_KEPT = 64
DENIED_HEADER = "X-MCP-Bridge-Denied"
MAX_CONNECTIONS_PER_CHILD = 64  # npm opens at most ~16 sockets at once; two per tunnel are held here
RESOURCE_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
EXHAUSTED_SAID_EVERY_S = 60  # a flood would log once a connection
LOST_CONNECTION_ERRORS = frozenset({errno.ECONNABORTED, errno.EPROTO, errno.EPERM})  # accept(2): that one is gone

Resolver = Callable[[str, int], Awaitable[list[str]]]


@dataclass(frozen=True)
class ProxyRoute:
    """One allowlist and where it is served: the Unix socket `socket`, or, with `port`, 127.0.0.1:port
    instead. `socket` names the route either way (denials are kept by it)."""

    socket: Path
    hosts: tuple[str, ...]
    port: int | None = None


@dataclass(frozen=True)
class Denial:
    """A refused CONNECT: what was asked, why not, and when (monotonic seconds)."""

    host: str
    port: int
    reason: str
    at: float


def route_for(proxy_dir: Path, hosts: tuple[str, ...]) -> ProxyRoute:
    """The route of an allowlist: one socket per distinct list, with a short, stable name, in this
    process's own folder of `proxy_dir`."""
    digest = hashlib.sha256("\n".join(sorted(hosts)).encode()).hexdigest()[:16]
    return ProxyRoute(proxy_dir / str(os.getpid()) / f"p-{digest}.sock", tuple(sorted(hosts)))


def sweep_dead_bridges(proxy_dir: Path) -> tuple[Path, ...]:
    """Remove the socket folders of bridge processes that are gone; the removed folders."""
    removed = []
    try:
        entries = list(proxy_dir.iterdir())
    except OSError:
        return ()
    for entry in entries:
        if not entry.name.isdigit() or pid_alive(int(entry.name)) or not entry.is_dir() or entry.is_symlink():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return tuple(removed)


def loopback_route(proxy_dir: Path, hosts: tuple[str, ...]) -> ProxyRoute:
    """The route of an allowlist on a 127.0.0.1 port of its own, bound once per process and list.

    Bound at launch time, not by `FilteringProxy.listen`, because the port is written into the
    child's profile and environment before the proxy serves it; binding here means no other
    process can take the port in between. The socket lives as long as the process (one per distinct
    list, like the Unix sockets), and each `FilteringProxy` serves a duplicate of it.
    """
    route = route_for(proxy_dir, hosts)
    with _loopback_lock:
        listener = _loopback.get(route.socket)
        if listener is None:
            listener = socket.create_server(("127.0.0.1", 0))
            _loopback[route.socket] = listener
    return replace(route, port=listener.getsockname()[1])


def _loopback_socket(route: ProxyRoute) -> socket.socket:
    with _loopback_lock:
        listener = _loopback.get(route.socket)
    if listener is None or listener.getsockname()[1] != route.port:
        raise RuntimeError(f"port {route.port} was not bound by loopback_route in this process")
    return listener


def host_allowed(host: str, hosts: tuple[str, ...]) -> bool:
    return any(host == h or (h.startswith("*.") and host.endswith(h[1:])) for h in hosts)


def refusal(host: str, port: int, hosts: tuple[str, ...], ports: tuple[int, ...] = ALLOWED_PORTS) -> str | None:
    """Why a CONNECT to host:port is refused on name alone, or None if it may be resolved."""
    if port not in ports:
        return f"port {port} is not proxied (only {', '.join(map(str, ports))})"
    if _is_ip_literal(host):
        return "IP addresses are not proxied; only host names on the server's list"
    if not host_allowed(host, hosts):
        return f"{host} is not on this server's network list ({', '.join(hosts) or 'empty'})"
    return None


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host.replace(".", "").isdigit()  # 127.1, 2130706433: still numbers to a resolver
    return True


async def system_resolve(host: str, port: int) -> list[str]:
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class FilteringProxy:
    """CONNECT-by-name proxy on Unix sockets; one instance serves every route."""

    def __init__(
        self,
        *,
        resolve: Resolver = system_resolve,
        public: Callable[[str], bool] = is_public,
        ports: tuple[int, ...] = ALLOWED_PORTS,
    ) -> None:
        """`resolve`, `public` (may an address be dialled) and `ports` are replaceable for tests."""
        self._resolve = resolve
        self._public = public
        self._ports = ports
        self._tg: TaskGroup | None = None
        self._routes: dict[Path, ProxyRoute] = {}
        self._denials: dict[Path, deque[Denial]] = {}
        self._connections: Counter[object] = Counter()  # open connections per child (`_peer`)
        self._warned: set[object] = set()  # children told of the bound, until their count drops to 0
        self._folders: set[Path] = set()  # socket folders this proxy made, removed when it stops
        self._exhausted_said = -EXHAUSTED_SAID_EVERY_S  # when "out of descriptors" was last logged
        self._waited = False  # out of descriptors and a connection is waiting: end it
        self._spare: int | None = None  # given up to accept and end one connection when out of fds

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled; Unix sockets and this process's folders are removed on the way out
        (loopback ports stay bound)."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._tg = None
            for path, route in self._routes.items():
                if route.port is None:
                    path.unlink(missing_ok=True)
            for folder in self._folders:
                with contextlib.suppress(OSError):  # not empty: someone else's socket is there
                    folder.rmdir()
            self._routes.clear()
            self._folders.clear()
            if self._spare is not None:
                os.close(self._spare)
                self._spare = None

    async def listen(self, route: ProxyRoute) -> None:
        """Serve `route` (idempotent); its socket or port accepts connections when this returns."""
        if self._tg is None:
            raise RuntimeError("FilteringProxy.listen before serve() started")
        if route.socket in self._routes:
            return
        listener: SocketListener
        if route.port is not None:
            listener = await SocketListener.from_socket(_loopback_socket(route).dup())
        else:
            folder = route.socket.parent
            if not folder.is_dir():  # this process's first route there: sweep the dead ones' first
                sweep_dead_bridges(folder.parent)
                folder.mkdir(parents=True, mode=0o700)
                self._folders.add(folder)
            if os.path.lexists(route.socket) and stat.S_ISSOCK(os.lstat(route.socket).st_mode):
                route.socket.unlink()  # left by a process of this pid that died
            listener = await anyio.create_unix_listener(route.socket)
            os.chmod(route.socket, 0o600)
        if self._spare is None:
            self._spare = _open_spare()
        self._routes[route.socket] = route
        self._denials[route.socket] = deque(maxlen=DENIALS_KEPT)
        self._tg.start_soon(self._accept, listener, route)

    async def _accept(self, listener: SocketListener, route: ProxyRoute) -> None:
        """Serve one route until the proxy stops, then close this proxy's listener. A listener that
        breaks drops its route alone; the next `listen` makes it anew."""
        assert self._tg is not None
        async with listener:
            while True:
                try:
                    client = await listener.accept()
                except (OSError, anyio.BrokenResourceError) as exc:
                    if not await self._accept_failed(listener, exc):
                        log.error("proxy listener for %s broke: %s", route.socket, exc.__cause__ or exc)
                        self._routes.pop(route.socket, None)
                        if route.port is None:
                            route.socket.unlink(missing_ok=True)
                        return
                    continue
                self._waited = False
                peer = _peer(client, route)
                if self._connections[peer] >= MAX_CONNECTIONS_PER_CHILD:
                    self._tg.start_soon(self._busy, client, peer)
                    continue
                self._connections[peer] += 1
                self._tg.start_soon(self._connection, route, client, peer)

    async def _accept_failed(self, listener: SocketListener, exc: BaseException) -> bool:
        """After a failed accept, whether the listener still serves.

        Out of descriptors (the kernel says so before it looks for a waiting connection): wait
        for a connection and try once more, in case some closed meanwhile; if still out, give up
        the spare descriptor to take that connection and end it, else every accept would fail
        again. A connection lost before it was accepted is gone already; anything else breaks it."""
        cause = exc if isinstance(exc, OSError) else exc.__cause__
        number = cause.errno if isinstance(cause, OSError) else None
        if number in LOST_CONNECTION_ERRORS:
            return True
        if number not in RESOURCE_ERRORS:
            return False
        raw: socket.socket = listener.extra(SocketAttribute.raw_socket)
        if not self._waited:
            if time.monotonic() - self._exhausted_said > EXHAUSTED_SAID_EVERY_S:
                self._exhausted_said = time.monotonic()
                log.warning("proxy out of descriptors (%s): ending connections until some close", os.strerror(number or 0))
            self._waited = True
            await anyio.wait_readable(raw)
            return True
        self._waited = False
        if self._spare is not None:
            os.close(self._spare)
        with contextlib.suppress(OSError):
            raw.accept()[0].close()
        self._spare = _open_spare()
        return True

    async def _busy(self, client: ByteStream, peer: object) -> None:
        async with client:
            if peer not in self._warned:
                self._warned.add(peer)
                log.warning("proxy refused a child more than %d open connections", MAX_CONNECTIONS_PER_CHILD)
            await _answer(client, 503, f"more than {MAX_CONNECTIONS_PER_CHILD} connections open from this child")

    async def _connection(self, route: ProxyRoute, client: ByteStream, peer: object) -> None:
        """One connection, whatever becomes of it: it ends alone and frees its child's slot."""
        try:
            await self._handle(route, client)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            log.debug("proxy connection ended: %r", exc)  # a side hung up, or the host ran out of something
        except Exception:  # a bug in one connection must not end the proxy for every child
            log.exception("proxy connection failed")
        finally:
            self._connections[peer] -= 1
            if not self._connections[peer]:
                del self._connections[peer]
                self._warned.discard(peer)

    def denials(self, socket_path: Path, since: float = 0.0) -> list[Denial]:
        """Refusals on one route since a monotonic time (e.g. the child's spawn)."""
        return [d for d in self._denials.get(socket_path, ()) if d.at >= since]

    async def _handle(self, route: ProxyRoute, client: ByteStream) -> None:
        async with client:
            try:
                with anyio.fail_after(HEAD_TIMEOUT_S):
                    head, rest = await _read_head(client)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, ValueError):
                return
            method, _, target = head.partition(" ")
            target = target.split(" ", 1)[0]
            if method != "CONNECT":
                await _answer(client, 405, "only CONNECT (https) is proxied")
                return
            host, _, port_text = target.rpartition(":")
            host = host.lower().rstrip(".")
            port = int(port_text) if port_text.isdigit() else 0
            upstream = await self._open(route, host, port, client)
            if upstream is None:
                return
            async with upstream:
                await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    await upstream.send(rest)
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_pipe, client, upstream, tg)
                    tg.start_soon(_pipe, upstream, client, tg)

    async def _open(self, route: ProxyRoute, host: str, port: int, client: ByteStream) -> SocketStream | None:
        reason = refusal(host, port, route.hosts, self._ports)
        addresses: list[str] = []
        if reason is None:
            try:
                addresses = await self._resolve(host, port)
            except (OSError, UnicodeError) as exc:  # UnicodeError: a label IDNA cannot encode
                reason = f"{host} does not resolve ({exc})"
            else:
                if not addresses or not all(self._public(a) for a in addresses):
                    reason = f"{host} resolves to a non-public address ({', '.join(addresses)})"
        if reason is not None:
            self._deny(route, host, port, reason)
            await _answer(client, 403, reason)
            return None
        for address in addresses:
            try:
                with anyio.fail_after(CONNECT_TIMEOUT_S):
                    return await anyio.connect_tcp(address, port)
            except (OSError, TimeoutError) as exc:
                reason = f"{host} ({address}) cannot be reached: {exc}"
        await _answer(client, 502, reason or "no address")
        return None

    def _deny(self, route: ProxyRoute, host: str, port: int, reason: str) -> None:
        log.info("proxy refused %s:%s: %s", host, port, reason)
        self._denials[route.socket].append(Denial(host, port, reason, time.monotonic()))


def _peer(client: ByteStream, route: ProxyRoute) -> object:
    """Who is connecting: the peer's pid on a Unix route (the child's forwarder), else the route."""
    if route.port is None and hasattr(socket, "SO_PEERCRED"):
        raw: socket.socket = client.extra(SocketAttribute.raw_socket)
        with contextlib.suppress(OSError):
            pid, _uid, _gid = struct.unpack("3i", raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            return pid
    return route.socket


def _open_spare() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return None


async def _read_head(stream: ByteStream) -> tuple[str, bytes]:
    """The request line of an HTTP head, and any bytes sent after the head."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > HEAD_LIMIT:
            raise ValueError("request head too long")
        buffer += await stream.receive()
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0].decode("latin-1"), rest


async def _answer(stream: ByteStream, status: int, reason: str) -> None:
    body = f"mcp-bridge sandbox proxy: {reason}\n".encode()
    words = {403: "Forbidden", 405: "Method Not Allowed", 502: "Bad Gateway", 503: "Service Unavailable"}[status]
    head = (
        f"HTTP/1.1 {status} {words}\r\nContent-Type: text/plain\r\n{DENIED_HEADER}: {reason}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    try:
        await stream.send(head.encode("latin-1", errors="replace") + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        return  # the child hung up first


async def _pipe(source: ByteStream, sink: ByteStream, tg: TaskGroup) -> None:
    try:
        async for chunk in source:
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # one side went away; the cancel below ends the other direction
    tg.cancel_scope.cancel()


_loopback: dict[Path, socket.socket] = {}  # route name -> its bound 127.0.0.1 listener (loopback_route)
_loopback_lock = threading.Lock()
