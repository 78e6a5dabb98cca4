"""``drsearch kg serve``: the SPARQL 1.1 protocol over a local RDF store (pyoxigraph).

The offline twin of the Wikidata Query Service: the same queries run unchanged on both
(no ``SERVICE wikibase:label``). ``GET /sparql?query=...`` and ``POST /sparql`` (form
``query=...`` or an ``application/sparql-query`` body) answer
``application/sparql-results+json``; a query that does not parse is HTTP 400 with the
parser's reason (never 500); another path is 404. The store is loaded once, read-only, from
Turtle; a file that does not parse is :class:`KGDataError` naming ``file:line``.

pyoxigraph is the optional extra ``kg`` (imported only here).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .errors import KGDataError
from .protocol import RESULTS_JSON


def _oxigraph() -> Any:
    try:
        import pyoxigraph
    except ImportError:
        raise KGDataError("kg serve needs the 'kg' extra: pip install 'drsearch[kg]' "
                          "(missing module pyoxigraph)") from None
    return pyoxigraph


def load_store(path: Path) -> Any:
    """A pyoxigraph ``Store`` (in memory) holding the Turtle file ``path``."""
    ox = _oxigraph()
    try:
        data = path.read_bytes()
    except OSError as e:
        raise KGDataError(f"{path}: cannot read ({e.strerror})") from None
    store = ox.Store()
    try:
        store.load(data, format=ox.RdfFormat.TURTLE)
    except SyntaxError as e:
        line = e.lineno if e.lineno is not None else "?"
        raise KGDataError(f"{path}:{line}: not valid Turtle ({e.msg})") from None
    if len(store) == 0:
        raise KGDataError(f"{path}:1: no triples")
    return store


class KGStore:
    """A loaded store answering SPARQL queries as sparql-results+json bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ox = _oxigraph()
        self._store = load_store(path)

    def __len__(self) -> int:
        return len(self._store)

    def answer(self, query: str) -> tuple[int, bytes]:
        """(HTTP status, body): 200 with results, 400 with the reason for a bad query."""
        try:
            results = self._store.query(query)
        except SyntaxError as e:
            return 400, json.dumps({"error": f"query does not parse: {e}"}).encode()
        if not hasattr(results, "serialize"):  # CONSTRUCT/DESCRIBE give triples: not this protocol's JSON
            return 400, json.dumps({"error": "only SELECT and ASK queries are served"}).encode()
        return 200, bytes(results.serialize(format=self._ox.QueryResultsFormat.JSON))


class _Handler(BaseHTTPRequestHandler):
    store: KGStore
    server_version = "drsearch-kg"

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path != "/sparql":
            return self._send(404, json.dumps({"error": f"no such path {url.path}; use /sparql"}).encode())
        query = parse_qs(url.query).get("query")
        if not query:
            return self._send(400, json.dumps({"error": "missing query parameter"}).encode())
        self._send(*self.store.answer(query[0]))

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode("utf-8", errors="replace")
        if url.path != "/sparql":
            return self._send(404, json.dumps({"error": f"no such path {url.path}; use /sparql"}).encode())
        ctype = (self.headers.get("content-type") or "").split(";")[0].strip().lower()
        if ctype == "application/sparql-query":
            query = body
        elif ctype == "application/x-www-form-urlencoded":
            query = (parse_qs(body).get("query") or [""])[0]
        else:
            return self._send(415, json.dumps({"error": f"content type {ctype!r}: use "
                                               "application/x-www-form-urlencoded or "
                                               "application/sparql-query"}).encode())
        if not query:
            return self._send(400, json.dumps({"error": "missing query"}).encode())
        self._send(*self.store.answer(query))

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", RESULTS_JSON if status == 200 else "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def make_server(store: KGStore, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A bound (not yet serving) HTTP server for ``store``; its endpoint is
    ``http://HOST:PORT/sparql``."""
    handler = type("KGHandler", (_Handler,), {"store": store})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


@contextmanager
def serve_in_thread(path: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``path`` on ``host`` (a free port) in a thread; yields the endpoint URL."""
    server = make_server(KGStore(path), host)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/sparql"
    finally:
        server.shutdown()
        server.server_close()


__all__ = ["KGStore", "load_store", "make_server", "serve_in_thread"]
