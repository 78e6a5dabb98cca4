"""Live ``Searcher`` implementations (in-process engine, HTTP client); the protocol is in index.

Every searcher answers with the exact bytes of the HTTP API's response body
(``ToolResponse``): canonical JSON of ``SearchResult.to_dict()`` / ``Document.to_dict()``,
or ``{"error": {"type", "message"}}`` for a request the engine refuses (unknown or blocked
document, bad ``k``, empty query). Those are answers, returned to the model; only a backend
that cannot answer at all raises :class:`SearcherError`. The replay cache
(``drsearch.agents.replay``) is the third implementation, interchangeable with these.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from ..contract import (
    IDENTITY_HEADER,
    CorpusInfo,
    DrsearchError,
    Retriever,
    Searcher,
    ToolResponse,
    canonical_json,
    error_body,
)
from .errors import SearcherError


class EngineSearcher:
    """An in-process :class:`~drsearch.contract.Retriever` (the engine) (the caller owns and closes it)."""

    def __init__(self, engine: Retriever) -> None:
        self._engine = engine

    def corpus(self) -> CorpusInfo:
        e = self._engine
        return CorpusInfo(e.meta["content_identity"], e.blocklist.sha256, len(e.blocklist), e.blocked_matched)

    @staticmethod
    def _answer(call: Callable[[], dict[str, Any]]) -> ToolResponse:
        """The body ``call`` returns, or the error body of the engine error it raises."""
        try:
            body = call()
        except DrsearchError as e:
            return ToolResponse(False, error_body(e.error_type, e.message))
        return ToolResponse(True, canonical_json(body).encode("utf-8"))

    def search(self, query: str, k: int) -> ToolResponse:
        return self._answer(lambda: self._engine.search(query, k).to_dict())

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        return self._answer(lambda: self._engine.open_document(docid=docid, url=url).to_dict(offset, length))


class HttpSearcher:
    """A client of ``drsearch serve`` (or the DR-256 service) over an injected httpx client.

    4xx answers are returned as error bodies; connection errors, timeouts and 5xx are
    retried ``attempts`` times with exponential backoff, then raise SearcherError.

    The first response fixes the server's ``x-drsearch-identity`` (corpus identity and
    blocklist SHA-256; ``drsearch run`` asks ``/health`` first, so that is the identity it
    records). Any later response with another value, or without one when the first had it
    (and the other way round), raises SearcherError naming both (a 5xx without one is a
    proxy's own error, retried as any 5xx): behind a load balancer,
    a replica on another corpus version or blocklist is an infrastructure failure, never
    an answer mixed into the run. Not retried: a retry that reached a right replica would
    hide the mixed fleet.
    """

    def __init__(self, client: httpx.Client, *, attempts: int = 4, backoff_s: float = 0.25) -> None:
        self._client = client
        self._attempts = attempts
        self._backoff_s = backoff_s
        self._corpus: CorpusInfo | None = None
        self._identity: str | None = None
        self._identity_seen = False
        self._identity_lock = threading.Lock()  # searchers are shared by a run's threads

    @classmethod
    def connect(cls, search_url: str, *, transport: httpx.BaseTransport | None = None,
                timeout_s: float = 30.0) -> HttpSearcher:
        """A searcher with its own client for the server at ``search_url`` (close it with :meth:`close`)."""
        return cls(httpx.Client(base_url=search_url.rstrip("/"), transport=transport, timeout=timeout_s))

    def close(self) -> None:
        self._client.close()

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        last = ""
        for attempt in range(self._attempts):
            if attempt:
                time.sleep(self._backoff_s * 2 ** (attempt - 1))
            try:
                r = self._client.request(method, path, json=body)
            except httpx.HTTPError as e:
                last = f"{e.__class__.__name__}: {e}"
                continue
            self._check_identity(method, path, r)
            if r.status_code < 500:
                return r
            last = f"HTTP {r.status_code}: {r.text[:200]}"
        raise SearcherError(f"{method} {path} failed after {self._attempts} attempts: {last}")

    @property
    def identity(self) -> str | None:
        """The ``x-drsearch-identity`` the first response carried (None: none yet, or none sent)."""
        return self._identity

    def _check_identity(self, method: str, path: str, r: httpx.Response) -> None:
        got = r.headers.get(IDENTITY_HEADER)
        if got is None and r.status_code >= 500:
            return  # a proxy's own 502/503 (no replica reached): retried like any 5xx
        with self._identity_lock:
            if not self._identity_seen:
                self._identity, self._identity_seen = got, True
                return
            expected = self._identity
        if got != expected:
            raise SearcherError(
                f"{method} {path}: the server answered as identity {got or '(none)'}, but this run "
                f"started on identity {expected or '(none)'} (x-drsearch-identity: corpus identity "
                "and blocklist SHA-256): a replica behind the load balancer serves another corpus "
                "or blocklist")

    def corpus(self) -> CorpusInfo:
        if self._corpus is None:
            r = self._request("GET", "/health")
            try:
                body = r.json()
                bl = body["blocklist"]
                self._corpus = CorpusInfo(body["corpus"]["identity"], bl["sha256"], bl.get("count"),
                                          bl.get("matched"))
            except (ValueError, KeyError, TypeError) as e:
                raise SearcherError(f"GET /health: not a drsearch health body ({e})") from None
            if self._identity is not None and self._identity != self._corpus.fleet_identity:
                raise SearcherError(f"GET /health: the body names identity {self._corpus.fleet_identity} "
                                    f"but the header {IDENTITY_HEADER} says {self._identity}")
        return self._corpus

    def _answer(self, path: str, body: dict[str, Any]) -> ToolResponse:
        r = self._request("POST", path, body)
        return ToolResponse(r.status_code == 200, r.content)

    def search(self, query: str, k: int) -> ToolResponse:
        return self._answer("/search", {"k": k, "query": query})

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        body: dict[str, Any] = {"offset": offset}
        body.update({"docid": docid} if docid is not None else {"url": url})
        if length is not None:
            body["length"] = length
        return self._answer("/open", body)


__all__ = ["CorpusInfo", "EngineSearcher", "HttpSearcher", "Searcher", "ToolResponse"]
