"""uvicorn's httptools protocol with the connection limits uvicorn does not have.

uvicorn closes a keep-alive connection that stays idle after a response, but it holds
forever a connection that never sends a byte or sends a partial request head, lets
httptools buffer a header of any size (a 150 MiB header is 150 MiB of worker memory),
and accepts connections until the process runs out of file descriptors. This protocol
adds, per connection of a worker:

- ``idle_timeout_s``: a connection with no request in progress (just opened, or after a
  response) is closed after this many seconds without a byte (uvicorn's keep-alive
  timeout, also armed when the connection opens);
- ``header_timeout_s``: the request line and headers must all arrive within this many
  seconds of the request's first byte, or the client gets 408 and the connection is
  closed (a slowloris drip of one header byte a second does not reset it). The body is
  covered by the request's time limit in the handlers (``time_limit_s``);
- ``max_header_bytes``: a request head (request line plus headers) longer than this gets
  431 and the connection is closed; at most one read (≤ 256 KiB) beyond the limit is
  ever buffered;
- ``max_connections``: a connection beyond this many open ones of the worker gets 503
  and is closed at once;
- ``max_client_connections``: a connection beyond this many open ones of the worker from
  the same peer address gets 503 ``too_many_client_connections`` and is closed at once, so
  that one client cannot hold all ``max_connections`` and keep everyone else out.

The limits come from the ``ServeConfig`` that ``drsearch serve`` put in the environment
(defaults of ``ServerSettings`` without one), or from the settings given to
:func:`limited_protocol` (a server that ``drsearch serve`` did not start:
``drsearch kg serve``). Refusals are JSON error bodies like every
other error, sent with ``connection: close``; each is logged at INFO.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..contract import IDENTITY_HEADER, InvalidInputError, error_body
from .settings import ServeConfig, ServerSettings

logger = logging.getLogger("drsearch.server")
PROTOCOL = "drsearch.server.protocol:LimitedHttpToolsProtocol"
_REASONS = {408: b"Request Timeout", 431: b"Request Header Fields Too Large", 503: b"Service Unavailable"}


@functools.cache
def _settings() -> ServerSettings:
    try:
        return ServeConfig.from_env().settings
    except InvalidInputError:  # not started by `drsearch serve` (e.g. uvicorn run by hand)
        return ServerSettings()


# The worker's x-drsearch-identity header line, set once by the app factory of a
# `drsearch serve` worker (``set_identity``): refusals sent before any request reaches the
# app carry it too, like every other response.
_identity_line = b""


def set_identity(identity: str) -> None:
    """Make this process's connection-level refusals carry ``x-drsearch-identity: identity``."""
    global _identity_line
    _identity_line = b"%s: %s\r\n" % (IDENTITY_HEADER.encode(), identity.encode("ascii"))


def raw_error(status: int, error_type: str, message: str) -> bytes:
    """A complete HTTP/1.1 error response with our JSON body, closing the connection."""
    body = error_body(error_type, message)
    head = (b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"%sconnection: close\r\n\r\n" % (status, _REASONS[status], len(body), _identity_line))
    return head + body


# Open connections of this worker per peer address (IP, port dropped): a worker is one process
# with one event loop, so a plain counter shared by its protocol instances is exact.
_PEERS: Counter[str] = Counter()


class _Refused(Exception):
    """Raised from a parser callback after a refusal, to stop parsing the connection."""


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` plus idle and header timeouts, a head size and connection limits."""

    limit_settings: ClassVar[ServerSettings | None] = None  # None: those of the environment

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        s = self.limit_settings if self.limit_settings is not None else _settings()
        self._header_timeout_s = s.header_timeout_s
        self._max_header_bytes = s.max_header_bytes
        self._max_connections = s.max_connections
        self._max_client_connections = s.max_client_connections
        self._peer: str | None = None
        self._reading_head = True  # between requests or inside a request head
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False

    # -- connection ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self._max_connections:
            self._refuse(503, "too_many_connections",
                         f"this worker holds its limit of {self._max_connections} connections; retry later")
            return
        if self.client is not None:  # None for a Unix socket: no peer address to count
            self._peer = str(self.client[0])
            _PEERS[self._peer] += 1
            if _PEERS[self._peer] > self._max_client_connections:
                self._refuse(503, "too_many_client_connections",
                             f"this client holds its limit of {self._max_client_connections} connections "
                             f"to this worker; close one or retry later")
                return
        # uvicorn arms its idle (keep-alive) timer only after a response: arm it now too,
        # so that a connection that never sends a byte is closed like an idle one.
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        if self._peer is not None:
            _PEERS[self._peer] -= 1
            if _PEERS[self._peer] <= 0:
                del _PEERS[self._peer]  # no entry left behind per address ever seen
            self._peer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # uvicorn's data_received, plus the head accounting; a refusal raised from a parser
        # callback ends the connection without uvicorn's 400.
        if self._refused:
            return
        self._unset_keepalive_if_required()
        if self._reading_head:
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            if self.refused():  # a callback refused (and answered) the request
                return
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)
            self.send_400_response(msg)
            return
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        if self._reading_head and self._head_bytes > self._max_header_bytes and \
                not self.transport.is_closing():
            self._refuse(431, "header_too_large",
                         f"request head over the limit of {self._max_header_bytes} bytes")

    # -- parser callbacks ---------------------------------------------------------------
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self._header_timeout_s, self._head_timed_out)

    def on_headers_complete(self) -> None:
        self._cancel_head_timer()
        self._reading_head = False
        size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
        if size > self._max_header_bytes:
            self._refuse(431, "header_too_large",
                         f"request head of {size} bytes; the limit is {self._max_header_bytes}")
            raise _Refused  # stops the parser: nothing of this request reaches the app
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading_head = True
        self._head_bytes = 0

    # -- refusals -----------------------------------------------------------------------
    def refused(self) -> bool:
        """True once this connection was refused (answered and closed)."""
        return self._refused

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._reading_head and not self.transport.is_closing():
            self._refuse(408, "header_timeout",
                         f"request head not received within {self._header_timeout_s:g} s")

    def _refuse(self, status: int, error_type: str, message: str) -> None:
        """Answer ``status`` (unless a response is under way) and close the connection."""
        self._refused = True
        logger.info("refused a connection from %s: %d %s (%s)",
                    f"{self.client[0]}:{self.client[1]}" if self.client else "?", status, error_type, message)
        self._cancel_head_timer()
        self._unset_keepalive_if_required()
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(raw_error(status, error_type, message))
        self.transport.close()


def limited_protocol(settings: ServerSettings) -> type[LimitedHttpToolsProtocol]:
    """The protocol class with ``settings``' connection limits, for uvicorn's ``http=`` (the
    idle timeout is uvicorn's ``timeout_keep_alive``: pass ``settings.idle_timeout_s`` too)."""
    return type("LimitedHttpToolsProtocol", (LimitedHttpToolsProtocol,), {"limit_settings": settings})


__all__ = ["PROTOCOL", "LimitedHttpToolsProtocol", "limited_protocol", "raw_error", "set_identity"]
