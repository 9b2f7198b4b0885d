"""The HTTP face's listening socket (`bridge.host.http.bind`)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from bridge.host.http import PortUnusable, bind


async def _nodelay_of_accepted(listener: socket.socket) -> int:
    """TCP_NODELAY on the connection asyncio accepts from `listener` (what uvicorn writes to)."""
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(handle, sock=listener)
    async with server:
        _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        value = await accepted
        writer.close()
    return value


async def test_answers_on_the_face_are_sent_without_waiting_for_the_hosts_ack() -> None:
    """Without TCP_NODELAY a warm call's body waited 40 ms for the host's delayed ACK."""
    assert await _nodelay_of_accepted(bind("127.0.0.1", 0)) != 0


async def test_a_listener_that_does_not_name_tcp_gets_no_nodelay_from_asyncio() -> None:
    """Why `bind` names the protocol: asyncio leaves such sockets as they are."""
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    plain.bind(("127.0.0.1", 0))
    plain.listen(8)
    assert await _nodelay_of_accepted(plain) == 0


def test_a_port_out_of_range_is_named() -> None:
    with pytest.raises(PortUnusable, match="70000"):
        bind("127.0.0.1", 70000)
