"""The socket ``angelia serve`` binds before printing its URL answers without Nagle delays."""

from __future__ import annotations

import asyncio
import socket

from app.cli import listen


async def test_connections_accepted_on_the_bound_socket_have_nodelay() -> None:
    # asyncio turns TCP_NODELAY on for accepted sockets only when the listening socket says
    # IPPROTO_TCP; without it, a response written in two parts waited ~40 ms for an ACK.
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    listener = listen("127.0.0.1", 0)
    port = listener.getsockname()[1]
    server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(accepted, 5) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
