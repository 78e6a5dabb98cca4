"""A listening TCP socket for the servers that hand uvicorn a socket they bound themselves.

asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on accepted sockets whose
protocol number says TCP, and an accepted socket inherits the listening socket's: one made
as ``socket.socket()`` (protocol 0) keeps Nagle on, so a response written as head then body
waits for the client's delayed ACK, ~40 ms on every keep-alive request. Made here with
``IPPROTO_TCP``, every connection is answered as soon as it is written.
"""

from __future__ import annotations

import socket


def tcp_listener(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A socket listening on ``host``:``port`` (0: a free port), ``SO_REUSEADDR`` as uvicorn
    binds. OSError when it cannot bind (the socket is closed)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


__all__ = ["tcp_listener"]
