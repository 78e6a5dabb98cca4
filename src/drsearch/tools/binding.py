"""Whether a listening address can be bound now: the check ``serve``, ``mcp`` and ``kg serve``
make before starting a server, so a busy port or an unknown host is one line and exit 2."""

from __future__ import annotations

import socket

from ..contract import InvalidInputError


def check_bindable(host: str, port: int) -> None:
    """Raise InvalidInputError unless ``host:port`` can be bound now.

    uvicorn reports an unknown host or a busy port only once it starts, in log lines and
    with exit 3; checked here, it is one line and exit 2 like every other bad option.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError) as e:
        raise InvalidInputError(f"--host {host}: not an address to bind ({e})") from None
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            s.bind(address)
        except OSError as e:
            raise InvalidInputError(f"--host {host} --port {port}: cannot bind ({e.strerror})") from None


__all__ = ["check_bindable"]
