"""What the local stand-ins of public APIs share (``dev.apis``, ``dev.domainapis``,
``dev.mediawiki``): a quiet handler that sends one text body, and a server run on a thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class TextHandler(BaseHTTPRequestHandler):
    """A handler that answers with one UTF-8 body of a content type, and logs nothing."""

    def _send(self, status: int, ctype: str, text: str, headers: dict[str, str] | None = None) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class RecordingServer(ThreadingHTTPServer):
    """A threading server that keeps the requests its handler records (under ``lock``)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.requests: list[str] = []
        self.lock = threading.Lock()


class Running:
    """A stand-in served on a daemon thread: its ``url``, the ``requests`` seen, ``stop()``."""

    def __init__(self, server: RecordingServer) -> None:
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def requests(self) -> list[str]:
        with self._server.lock:
            return list(self._server.requests)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


__all__ = ["RecordingServer", "Running", "TextHandler"]
