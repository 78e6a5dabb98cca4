"""A stand-in for ``drsearch serve`` that misbehaves, for tests of drsearch.server.launch.

Run as ``python fake_serve.py serve --database D ... --host H --port P --workers W``;
``FAKE_SERVE_MODE`` picks the misbehaviour:

- ``ignore-term``: answers ``GET /health`` 200 and ignores SIGTERM (only SIGKILL stops it);
- ``silent``: never listens (a server stuck before binding).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    argv = sys.argv[1:]
    host, port = argv[argv.index("--host") + 1], int(argv[argv.index("--port") + 1])
    mode = os.environ["FAKE_SERVE_MODE"]
    print(f"fake serve ({mode}) on {host}:{port}", flush=True)
    if mode == "silent":
        while True:
            time.sleep(1)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    HTTPServer((host, port), Health).serve_forever()


if __name__ == "__main__":
    main()
