"""The store behind ``drsearch kg serve``: SPARQL 1.1 queries over a local RDF graph (pyoxigraph).

The offline twin of the Wikidata Query Service: the same queries run unchanged on both
(no ``SERVICE wikibase:label``). The store is loaded once, read-only, from Turtle; a file
that does not parse is :class:`KGDataError` naming ``file:line``. :meth:`KGStore.respond`
turns one query into one answer (status, media type, body), errors included: it never
raises for a bad query. It has no time limit of its own: the endpoint (:mod:`.kgserve`)
runs it in worker processes (:mod:`.kgworkers`) that it kills at the deadline.

pyoxigraph is the optional extra ``kg`` (imported only here).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....contract import error_body
from .errors import KGDataError
from .kgquery import negotiate, uses_federation
from .protocol import RESULTS_JSON

JSON = "application/json"
RESULTS_XML = "application/sparql-results+xml"
TURTLE = "text/turtle"
N_TRIPLES = "application/n-triples"
FEDERATION_REFUSED = ("SERVICE (federated query) is refused: this endpoint answers from its own "
                      "graph only and fetches no URL")


def oxigraph() -> Any:
    try:
        import pyoxigraph
    except ImportError:
        raise KGDataError("kg serve needs the 'kg' extra: pip install 'drsearch[kg]' "
                          "(missing module pyoxigraph)") from None
    return pyoxigraph


def read_kg(path: Path) -> bytes:
    """The bytes of the Turtle file ``path`` (KGDataError when it cannot be read)."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise KGDataError(f"{path}: cannot read ({e.strerror})") from None


def load_store(path: Path, data: bytes | None = None) -> Any:
    """A pyoxigraph ``Store`` (in memory) holding the Turtle file ``path`` (or ``data``, its
    bytes read before; errors still name ``path``)."""
    ox = oxigraph()
    if data is None:
        data = read_kg(path)
    store = ox.Store()
    try:
        store.load(data, format=ox.RdfFormat.TURTLE)
    except SyntaxError as e:
        line = e.lineno if e.lineno is not None else "?"
        raise KGDataError(f"{path}:{line}: not valid Turtle ({e.msg})") from None
    if len(store) == 0:
        raise KGDataError(f"{path}:1: no triples")
    return store


@dataclass(frozen=True)
class KGAnswer:
    """One answer of the endpoint: HTTP status, media type, body; ``error_type`` names an error."""

    status: int
    content_type: str
    body: bytes
    error_type: str | None = None


def kg_error(status: int, error_type: str, message: str) -> KGAnswer:
    """An error answer with the project's one error body (``{"error": {"message", "type"}}``)."""
    return KGAnswer(status, JSON, error_body(error_type, message), error_type)


class _CappedWriter:
    """A binary sink that raises :class:`_ResultTooLarge` past ``limit`` bytes, so that the
    serializer stops at the cap instead of building the whole answer first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise _ResultTooLarge
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


class _ResultTooLarge(Exception):
    pass


class KGStore:
    """A loaded store answering SPARQL queries (in this process, without a time limit: the
    endpoint runs it in worker processes that it kills at the deadline, :mod:`.kgworkers`)."""

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        self.path = path
        self._ox = oxigraph()
        self._store = load_store(path, data)

    def __len__(self) -> int:
        return len(self._store)

    def answer(self, query: str) -> tuple[int, bytes]:
        """(HTTP status, body) of :meth:`respond` with the default media type and no size cap."""
        got = self.respond(query)
        return got.status, got.body

    def respond(self, query: str, accept: str | None = None, max_result_bytes: int | None = None) -> KGAnswer:
        """The answer to ``query``: SELECT/ASK as SPARQL results (JSON by default, or XML, CSV,
        TSV), CONSTRUCT/DESCRIBE as Turtle (default) or N-Triples, chosen by ``accept``.
        Errors (never raised): 400 ``invalid_query`` (does not parse), 400
        ``federation_refused`` (``SERVICE``), 406 ``not_acceptable`` (``accept`` allows no
        format of this query form), 422 ``result_too_large`` (over ``max_result_bytes``)."""
        if uses_federation(query):
            return kg_error(400, "federation_refused", FEDERATION_REFUSED)
        try:
            results = self._store.query(query)
        except SyntaxError as e:
            return kg_error(400, "invalid_query", f"query does not parse: {e}")
        ox = self._ox
        if isinstance(results, ox.QueryTriples):
            formats = {TURTLE: ox.RdfFormat.TURTLE, N_TRIPLES: ox.RdfFormat.N_TRIPLES}
        else:  # QuerySolutions (SELECT) or QueryBoolean (ASK)
            formats = {RESULTS_JSON: ox.QueryResultsFormat.JSON, RESULTS_XML: ox.QueryResultsFormat.XML,
                       "text/csv": ox.QueryResultsFormat.CSV,
                       "text/tab-separated-values": ox.QueryResultsFormat.TSV}
        media = negotiate(accept, tuple(formats))
        if media is None:
            return kg_error(406, "not_acceptable", f"Accept {accept!r}: this query's answer is one of "
                                                   f"{', '.join(formats)}")
        sink = _CappedWriter(max_result_bytes if max_result_bytes is not None else 1 << 62)
        try:
            results.serialize(sink, format=formats[media])
        except _ResultTooLarge:
            return kg_error(422, "result_too_large", f"the answer exceeds the endpoint's limit of "
                                                     f"{sink.limit} bytes (--max-result-bytes); add a LIMIT "
                                                     "or select fewer variables")
        except OSError as e:  # a store read error, or a query that fails while it runs
            return kg_error(400, "query_failed", f"query failed: {e}")
        return KGAnswer(200, media, b"".join(sink.parts))


__all__ = ["FEDERATION_REFUSED", "KGAnswer", "KGStore", "kg_error", "load_store", "oxigraph", "read_kg"]
