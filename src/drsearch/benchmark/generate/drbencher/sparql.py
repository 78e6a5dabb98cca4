"""A SPARQL 1.1 protocol client (over httpx) and its replay-cached front.

:class:`SparqlClient` speaks the protocol to any endpoint — the live Wikidata Query Service
or ``drsearch kg serve`` — with a descriptive User-Agent (the service's policy asks for
one), at most ``max_in_flight`` queries at once, a per-query timeout, and bounded
exponential backoff on 408, 429 and 5xx (and on transport errors) that honours
``Retry-After`` (seconds or an HTTP date, up to ``backoff_max_s``; drsearch.contract.retry's
one loop). A query is sent with GET when its URL stays short, else POST
(``application/x-www-form-urlencoded``), unless ``method`` forces one. Results are
``application/sparql-results+json``.

:class:`CachedSparql` puts the agents layer's replay cache in front (kind ``sparql``, keyed
by endpoint and query text), so a recorded generation replays offline: in replay mode there
is no client at all and a miss is ReplayMissError naming the query.

Queries must run unchanged on both endpoints: they use ``rdfs:label``/``skos:altLabel`` with
language filters, never ``SERVICE wikibase:label`` (:func:`check_portable`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from .... import __version__
from ....agents import ReplayCache
from ....agents.canonical import sha256_hex
from ....contract.retry import GaveUp, RetryPolicy, TryAgain, retry, transient_answer
from .errors import KGEndpointError, SparqlError
from .protocol import RESULTS_JSON

DEFAULT_USER_AGENT = f"drsearch-drbencher/{__version__} (benchmark generator; SPARQL 1.1 protocol client)"
_GET_MAX_URL = 2000  # longer queries go by POST (proxies truncate long URLs)


class SparqlSettings(BaseModel):
    """How to reach an endpoint (part of a stage's settings, so part of its key)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    endpoint: str = Field(pattern=r"^https?://\S+$")
    user_agent: str = Field(default=DEFAULT_USER_AGENT, min_length=1)
    method: Literal["auto", "GET", "POST"] = "auto"
    max_in_flight: int = Field(default=2, ge=1, le=64)
    timeout_s: float = Field(default=60.0, gt=0)
    max_attempts: int = Field(default=5, ge=1, le=50)
    backoff_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=60.0, ge=0)

    @property
    def retry(self) -> RetryPolicy:
        """The retry fields as the shared policy (a ``Retry-After`` is honoured up to ``backoff_max_s``)."""
        return RetryPolicy(max_attempts=self.max_attempts, backoff_s=self.backoff_s,
                           backoff_max_s=self.backoff_max_s, timeout_s=self.timeout_s)


def check_portable(query: str) -> None:
    """Refuse a query the offline store cannot run (the label service is Wikidata-only)."""
    if "wikibase:label" in query:
        raise ValueError("query uses SERVICE wikibase:label: use rdfs:label/skos:altLabel with a language "
                         "filter so it runs on drsearch kg serve too")


@dataclass(frozen=True)
class SparqlResult:
    """A parsed sparql-results+json document: ``vars`` and ``bindings`` (SELECT) or ``boolean`` (ASK)."""

    vars: tuple[str, ...]
    bindings: tuple[dict[str, dict[str, str]], ...]
    boolean: bool | None

    @classmethod
    def parse(cls, body: bytes, describe: str) -> SparqlResult:
        try:
            doc = json.loads(body)
            if "boolean" in doc:
                return cls((), (), bool(doc["boolean"]))
            bindings = tuple(dict(b) for b in doc["results"]["bindings"])
            return cls(tuple(doc["head"].get("vars", [])), bindings, None)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise SparqlError(f"{describe}: the endpoint's answer is not sparql-results+json") from None

    def values(self, var: str) -> list[str]:
        """The ``value`` of ``var`` in every binding that has it, in result order."""
        return [b[var]["value"] for b in self.bindings if var in b]


class SparqlClient:
    """One endpoint. Thread-safe; ``close()`` when done."""

    def __init__(self, settings: SparqlSettings, *, sleep: Callable[[float], None] = time.sleep,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        self._sleep = sleep
        self._slots = threading.BoundedSemaphore(settings.max_in_flight)
        self._http = httpx.Client(headers={"Accept": RESULTS_JSON, "User-Agent": settings.user_agent},
                                  timeout=settings.timeout_s, transport=transport)
        self._count_lock = threading.Lock()
        self.requests = 0  # HTTP requests sent (tries included)

    def close(self) -> None:
        self._http.close()

    def _send(self, query: str) -> httpx.Response:
        s = self.settings
        method = s.method
        if method == "auto":
            url = httpx.URL(s.endpoint, params={"query": query})
            method = "GET" if len(str(url)) <= _GET_MAX_URL else "POST"
        with self._slots:
            with self._count_lock:
                self.requests += 1
            if method == "GET":
                return self._http.get(s.endpoint, params={"query": query})
            return self._http.post(s.endpoint, data={"query": query})

    def fetch(self, query: str, describe: str) -> tuple[bool, bytes]:
        """``(ok, body)`` of one query after retries. ok False: a 4xx answer (the query is at
        fault: stored by the cache as a failure). Raises SparqlError when tries run out."""
        s = self.settings

        def attempt(_: int) -> tuple[bool, bytes]:
            try:
                r = self._send(query)
            except httpx.HTTPError as e:
                raise TryAgain(f"{e.__class__.__name__}: {e}") from None
            if r.status_code == 200:
                return True, r.content
            again = transient_answer(r.status_code, r.headers)
            if again is not None:
                raise again
            return False, json.dumps({"error": r.text[:500], "status": r.status_code}).encode()

        try:
            return retry(attempt, s.retry, sleep=self._sleep)
        except GaveUp as e:
            raise SparqlError(f"{describe}: {s.endpoint} failed {e.attempts} time(s) "
                              f"({e.last.reason})") from None

    def probe(self) -> None:
        """``ASK {}`` once (no retries): KGEndpointError (exit 2) when the endpoint does not answer it."""
        try:
            r = self._http.get(self.settings.endpoint, params={"query": "ASK {}"})
        except httpx.HTTPError as e:
            raise KGEndpointError(f"SPARQL endpoint {self.settings.endpoint} is unreachable "
                                  f"({e.__class__.__name__}: {e})") from None
        if r.status_code != 200:
            raise KGEndpointError(f"SPARQL endpoint {self.settings.endpoint} answered the probe "
                                  f"HTTP {r.status_code}")
        if SparqlResult.parse(r.content, "probe").boolean is None:
            raise KGEndpointError(f"SPARQL endpoint {self.settings.endpoint}: the probe's answer is not "
                                  "an ASK result")


class CachedSparql:
    """Queries through a :class:`ReplayCache` (kind ``sparql``); ``client`` None: replay only."""

    def __init__(self, cache: ReplayCache, client: SparqlClient | None, endpoint: str,
                 answers: dict[str, dict[str, str]] | None = None) -> None:
        """``answers``, when given, collects ``{sha256(query): {query, response_sha256}}`` of
        every answer used: the record a rerun compares against the endpoint (``--refresh-kg``)."""
        self._cache = cache
        self._client = client
        self._endpoint = endpoint
        self._answers = answers
        self._lock = threading.Lock()

    def select(self, query: str, describe: str) -> SparqlResult:
        check_portable(query)
        client = self._client

        def live() -> tuple[bool, bytes]:
            assert client is not None
            return client.fetch(query, describe)

        if self._cache.mode == "off":
            ok, body = live()
        else:
            ok, body = self._cache.fetch("sparql", ["sparql", self._endpoint, query], describe,
                                         None if client is None else live)
        if not ok:
            reason = body[:300].decode(errors="replace")
            raise SparqlError(f"{describe}: the endpoint refused the query ({reason})")
        if self._answers is not None:
            with self._lock:
                self._answers[sha256_hex(query.encode())] = {"query": query,
                                                             "response_sha256": sha256_hex(body)}
        return SparqlResult.parse(body, describe)


def binding_value(binding: dict[str, Any], var: str) -> str | None:
    cell = binding.get(var)
    return None if cell is None else str(cell["value"])


__all__ = ["DEFAULT_USER_AGENT", "RESULTS_JSON", "CachedSparql", "SparqlClient", "SparqlResult",
           "SparqlSettings", "binding_value", "check_portable"]
