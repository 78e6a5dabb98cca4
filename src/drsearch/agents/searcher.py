"""Live ``Searcher`` implementations (in-process engine, HTTP client); the protocol is in index.

Every searcher answers with the exact bytes of the HTTP API's response body
(``ToolResponse``): canonical JSON of ``SearchResult.to_dict()`` / ``Document.to_dict()``,
or ``{"error": {"type", "message"}}`` for a request the engine refuses (unknown or blocked
document, bad ``k``, empty query). Those are answers, returned to the model; only a backend
that cannot answer at all raises :class:`SearcherError`. The replay cache
(``drsearch.agents.replay``) is the third implementation, interchangeable with these.
"""

from __future__ import annotations

import random
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
    UpstreamUnavailableError,
    canonical_json,
    error_body,
)
from ..contract.retry import RETRY_STATUSES, GaveUp, RetryPolicy, TryAgain, retry, transient_answer
from .errors import AgentError, SearcherError


class EngineSearcher:
    """An in-process :class:`~drsearch.contract.Retriever` (the engine) (the caller owns and closes it)."""

    def __init__(self, engine: Retriever) -> None:
        self._engine = engine

    @property
    def engine(self) -> Retriever:
        return self._engine

    def corpus(self) -> CorpusInfo:
        e = self._engine
        choice = e.blocklist_choice
        return CorpusInfo(e.meta["content_identity"], e.blocklist.sha256, len(e.blocklist), e.blocked_matched,
                          choice.origin, choice.release_sha256,
                          retriever=e.meta.get("retriever"))

    @staticmethod
    def _answer(call: Callable[[], dict[str, Any]]) -> ToolResponse:
        """The body ``call`` returns, or the error body of the engine error it raises. An agents
        error raised inside (a query vector the replay cache lacks and no model can make) is not
        the engine's answer: it passes through (an infrastructure failure, never cached)."""
        try:
            body = call()
        except AgentError:
            raise
        except UpstreamUnavailableError as e:  # the reranker's endpoint: infrastructure, not an answer
            raise SearcherError(e.message) from None
        except DrsearchError as e:
            return ToolResponse(False, error_body(e.error_type, e.message))
        return ToolResponse(True, canonical_json(body).encode("utf-8"))

    def search(self, query: str, k: int) -> ToolResponse:
        return self._answer(lambda: self._engine.search(query, k).to_dict())

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        return self._answer(lambda: self._engine.open_document(docid=docid, url=url).to_dict(offset, length))


class HttpSearcher:
    """A client of ``drsearch serve`` (or the DR-256 service) over an injected httpx client.

    4xx answers are returned as error bodies; connection errors, timeouts, 408, 429 and 5xx
    are retried ``attempts`` times with exponential backoff (``Retry-After`` honoured, up to
    30 s; drsearch.contract.retry's one loop), then raise SearcherError.

    Identity (docs/SCALING.md): the first ``x-drsearch-identity`` header, or the identity
    ``/health``'s body names (``drsearch run`` asks ``/health`` first), fixes the fleet's
    identity. From then on a response with another value raises SearcherError naming both,
    at once: a retry that reached a right replica would hide the mixed fleet. A response
    without the header is not an answer either: it is retried (the next try may take another
    route), then refused -- a gateway that strips the header hides which replica answered.
    A 5xx (or 408/429) without the header is a proxy's own error (no replica reached), retried
    as any transient answer.
    A header that appears after answers without one is refused too (the other way round).

    ``health_check_every`` (N > 0) is the check for gateways that strip the header: responses
    without it are accepted, and after a random number of answers (uniform in 1..2N, from a
    generator seeded with ``seed``) the client asks ``/health`` and compares the
    identity in its body, raising SearcherError on another one. The gaps are random, not
    every N-th request, because a round-robin balancer would otherwise send every check to
    the same replica. It is a sampled check: a foreign replica that takes a share ``f`` of
    the traffic escapes ``m`` checks with probability ``(1 - f) ** m``.
    """

    def __init__(self, client: httpx.Client, *, attempts: int = 4, backoff_s: float = 0.25,
                 health_check_every: int = 0, seed: int = 0, retry: RetryPolicy | None = None,
                 sleep: Callable[[float], object] = time.sleep) -> None:
        """``retry`` (the shared policy) wins over ``attempts``/``backoff_s``, its shorthand;
        ``sleep`` (tests) replaces the retry wait."""
        if health_check_every < 0:
            raise ValueError("health_check_every must be >= 0")
        self._client = client
        self._sleep = sleep
        self._retry = retry or RetryPolicy(max_attempts=attempts, backoff_s=backoff_s, backoff_max_s=30.0)
        self._corpus: CorpusInfo | None = None
        self._identity: str | None = None
        self._headerless_seen = False  # a response without the header was accepted before any identity
        self._identity_lock = threading.Lock()  # searchers are shared by a run's threads
        self._health_every = health_check_every
        self._rng = random.Random(seed)
        self._until_check = self._next_gap()
        self._checks = 0

    @classmethod
    def connect(cls, search_url: str, *, transport: httpx.BaseTransport | None = None,
                timeout_s: float = 30.0, health_check_every: int = 0) -> HttpSearcher:
        """A searcher with its own client for the server at ``search_url`` (close it with :meth:`close`)."""
        return cls(httpx.Client(base_url=search_url.rstrip("/"), transport=transport, timeout=timeout_s),
                   health_check_every=health_check_every,
                   retry=RetryPolicy(max_attempts=4, backoff_s=0.25, timeout_s=timeout_s))

    def close(self) -> None:
        self._client.close()

    def _next_gap(self) -> int:
        return self._rng.randint(1, 2 * self._health_every) if self._health_every else 0

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        def attempt(_: int) -> httpx.Response:
            try:
                r = self._client.request(method, path, json=body)
            except httpx.HTTPError as e:
                raise TryAgain(f"{e.__class__.__name__}: {e}") from None
            missing = self._check_identity(method, path, r)
            if missing:
                raise TryAgain(missing)
            again = transient_answer(r.status_code, r.headers, r.text[:200])
            if again is not None:
                raise again
            return r

        try:
            return retry(attempt, self._retry, sleep=self._sleep)
        except GaveUp as e:
            raise SearcherError(f"{method} {path} failed after {e.attempts} attempts: "
                                f"{e.last.reason}") from None

    @property
    def identity(self) -> str | None:
        """The fleet identity this client holds the server to (None: none seen yet)."""
        return self._identity

    @property
    def health_checks(self) -> int:
        """How many periodic ``/health`` identity checks were made (``health_check_every``)."""
        return self._checks

    def _mismatch(self, method: str, path: str, got: str | None, expected: str | None) -> SearcherError:
        return SearcherError(
            f"{method} {path}: the server answered as identity {got or '(none)'}, but this run "
            f"started on identity {expected or '(none)'} (x-drsearch-identity: corpus identity "
            "and blocklist SHA-256): a replica behind the load balancer serves another corpus "
            "or blocklist")

    def _check_identity(self, method: str, path: str, r: httpx.Response) -> str:
        """Raise on a foreign identity; return why ``r`` must be retried ('' if it is usable)."""
        got = r.headers.get(IDENTITY_HEADER)
        if got is None and r.status_code in RETRY_STATUSES:
            return ""  # a proxy's own 502/503/429 (no replica reached): retried like any transient answer
        with self._identity_lock:
            expected = self._identity
            if got is None:
                if expected is None:
                    self._headerless_seen = True
                    return ""
                if self._health_every:
                    return ""  # a header-stripping gateway: the /health checks stand in for it
                return (f"HTTP {r.status_code} without {IDENTITY_HEADER}, but this run started on "
                        f"identity {expected}: an answer that does not say which replica gave it is "
                        "refused (a gateway that strips the header? see --identity-check-every, "
                        "docs/SCALING.md)")
            if expected is None and not (self._headerless_seen and not self._health_every):
                self._identity = got
                return ""
        if got != expected:
            raise self._mismatch(method, path, got, expected)
        return ""

    def _adopt(self, identity: str) -> None:
        """Hold the server to the identity a ``/health`` body names, if no header named one."""
        with self._identity_lock:
            if self._identity is None:
                self._identity = identity

    def _periodic_check(self) -> None:
        """With ``health_check_every``: ask ``/health`` when the random gap has run out."""
        if not self._health_every:
            return
        with self._identity_lock:
            self._until_check -= 1
            if self._until_check > 0:
                return
            self._until_check = self._next_gap()
            self._checks += 1
        named = _health_corpus(self._request("GET", "/health")).fleet_identity
        if named != self._identity:
            raise SearcherError(
                f"GET /health: a replica names identity {named} in its body, but this run started on "
                f"identity {self._identity or '(none)'}: a replica behind the load balancer serves "
                "another corpus or blocklist")

    def corpus(self) -> CorpusInfo:
        if self._corpus is None:
            corpus = _health_corpus(self._request("GET", "/health"))
            if self._identity is not None and self._identity != corpus.fleet_identity:
                raise SearcherError(f"GET /health: the body names identity {corpus.fleet_identity} "
                                    f"but the header {IDENTITY_HEADER} says {self._identity}")
            self._adopt(corpus.fleet_identity)
            self._corpus = corpus
        return self._corpus

    def _answer(self, path: str, body: dict[str, Any]) -> ToolResponse:
        r = self._request("POST", path, body)
        self._periodic_check()
        return ToolResponse(r.status_code == 200, r.content)

    def search(self, query: str, k: int) -> ToolResponse:
        return self._answer("/search", {"k": k, "query": query})

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        body: dict[str, Any] = {"offset": offset}
        body.update({"docid": docid} if docid is not None else {"url": url})
        if length is not None:
            body["length"] = length
        return self._answer("/open", body)


def _health_corpus(r: httpx.Response) -> CorpusInfo:
    """The corpus and blocklist a ``/health`` body names; SearcherError if it is not one."""
    try:
        body = r.json()
        bl = body["blocklist"]
        return CorpusInfo(body["corpus"]["identity"], bl["sha256"], bl.get("count"), bl.get("matched"),
                          bl.get("origin"), bl.get("release_sha256"),
                          retriever=body.get("retriever"))
    except (ValueError, KeyError, TypeError) as e:
        raise SearcherError(f"GET /health: not a drsearch health body ({e})") from None


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # of no bytes: no blocklist


class NoCorpus:
    """The searcher of a run whose preset offers neither search nor open (the biomedical tools
    alone): it serves no corpus, and a call of it is refused like an unknown document."""

    IDENTITY = "none"

    def corpus(self) -> CorpusInfo:
        return CorpusInfo(self.IDENTITY, EMPTY_SHA256, 0, 0)

    def search(self, query: str, k: int) -> ToolResponse:
        return ToolResponse(False, error_body("no_corpus", "this run serves no corpus"))

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        return ToolResponse(False, error_body("no_corpus", "this run serves no corpus"))


__all__ = ["CorpusInfo", "EngineSearcher", "HttpSearcher", "NoCorpus", "Searcher", "ToolResponse"]
