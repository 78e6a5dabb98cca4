"""``tcp_listener``: every connection accepted by an asyncio server (uvicorn's loop) on it has
Nagle's algorithm off. With a protocol-0 socket asyncio leaves it on, and the KG endpoint
answered each keep-alive query after the client's delayed ACK (~40 ms instead of ~2 ms)."""

from __future__ import annotations

import asyncio
import socket

from drsearch.benchmark.generate.drbencher.kgserve import listen
from drsearch.contract.listen import tcp_listener


def nodelay_of_accepted(sock: socket.socket) -> int:
    """TCP_NODELAY of the server side of one connection accepted by asyncio on ``sock``."""
    seen: list[int] = []

    async def main() -> None:
        def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(connected, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            for _ in range(200):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(main())
    return seen[0]


def test_connections_on_a_tcp_listener_have_nagle_off() -> None:
    assert nodelay_of_accepted(tcp_listener("127.0.0.1", 0)) == 1
    assert nodelay_of_accepted(listen("127.0.0.1", 0)) == 1  # drsearch kg serve's socket


def test_a_protocol_0_socket_keeps_nagle_on() -> None:
    """What the test above guards against: the same check on a plain ``socket.socket()``."""
    plain = socket.socket()
    plain.bind(("127.0.0.1", 0))
    plain.listen()
    assert nodelay_of_accepted(plain) == 0
