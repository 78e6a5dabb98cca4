"""What ``serve``, ``mcp`` and ``kg serve`` share about listening: whether an address can be
bound now (checked before a server starts, so a busy port or an unknown host is one line and
exit 2), and the connection limits ``serve`` and ``kg serve`` both take (docs/SERVER.md)."""

from __future__ import annotations

import argparse
import socket

from ..contract import InvalidInputError
from .argtypes import int_in, seconds


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


def add_connection_arguments(p: argparse.ArgumentParser) -> None:
    """The connection limits of a server on the project's uvicorn stack (one set, one set of
    defaults: ``drsearch serve`` and ``drsearch kg serve`` alike)."""
    p.add_argument("--idle-timeout", type=seconds(3600), default=30.0, metavar="S",
                   help="close a connection idle this long between requests (default 30)")
    p.add_argument("--header-timeout", type=seconds(3600), default=10.0, metavar="S",
                   help="a request's line and headers must arrive within S seconds (408; default 10)")
    p.add_argument("--max-header-bytes", type=int_in(1024, 16 << 20), default=64 << 10, metavar="N",
                   help="largest request head in bytes (431 beyond; default 65536)")
    p.add_argument("--max-connections", type=int_in(1, 1_000_000), default=1000, metavar="N",
                   help="open connections per worker (503 beyond; default 1000)")
    p.add_argument("--max-client-connections", type=int_in(1, 1_000_000), default=250, metavar="N",
                   help="open connections per worker from one client address (503 beyond; default 250; "
                        "behind a proxy, as many as --max-connections)")


__all__ = ["add_connection_arguments", "check_bindable"]
