"""Openness stage 1: the evidence bundle of an item, gathered without an LLM.

Routes (each optional; the stage uses every route it is given):

- ``corpus``: a drsearch server (``drsearch serve``) over a corpus of follow-up records, searched
  by the source's title and by the question (``POST /search``). The offline, reproducible route:
  the engine is the evidence store. Evidence ids ``corpus:<docid>``.
- by the source's identifier kind, clients of public APIs (or of a server answering in their
  shapes): ``europepmc`` — a PMID's citing articles (``GET {base}/MED/{pmid}/citations``, Europe PMC
  REST), ids ``europepmc:<source>:<id>``; ``ctgov`` — a trial registration's status, completion
  date and whether results are posted (``GET {base}/studies/{nct}``, ClinicalTrials.gov API v2),
  id ``ctgov:<nct>``; ``s2`` — an arXiv paper's citing papers
  (``GET {base}/paper/arXiv:{id}/citations``, Semantic Scholar graph API), ids ``s2:<paperId>``.

Every request goes through the pipeline's replay cache (``StageContext.fetch``), is rate-limited
per route (at most one live request per ``min_interval_s``), sends a descriptive ``User-Agent``
and is recorded in the bundle with its HTTP status and the SHA-256 of its body. A 404 is an
answer (no evidence). The public APIs answer 429 when a client goes too fast (Semantic Scholar's
shared pool often does) and 5xx when busy: those (and 408), and transport errors, are tried again
up to ``max_attempts`` times in all, waiting ``backoff_s`` · 2^n or the server's ``Retry-After``
(seconds or an HTTP date) when that is longer, capped at ``MAX_WAIT_S``
(drsearch.contract.retry's one loop); only the final answer is cached. A
Semantic Scholar API key (``s2_api_key``, read from the environment variable the settings name)
is sent as ``x-api-key`` and recorded nowhere. Any
other status (a 4xx is the request's fault), or running out of attempts, stops the stage with
one line naming the route, the URL and the last status (exit 1; finished items are kept for the
rerun).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from .... import __version__
from ....agents.canonical import sha256_hex
from ....contract.retry import RETRY_STATUSES, GaveUp, RetryPolicy, TryAgain, retry, transient_answer
from ...citations import arxiv_id
from ..errors import GenerateError
from ..stages import StageContext

PUBLIC_APIS = {"ctgov": "https://clinicaltrials.gov/api/v2", "europepmc": "https://www.ebi.ac.uk/europepmc/webservices/rest",
               "s2": "https://api.semanticscholar.org/graph/v1"}
"""The public APIs' base URLs (``--public-apis``); each can be pointed elsewhere."""
ROUTE_OF_KIND = {"pmid": "europepmc", "nct": "ctgov", "arxiv": "s2"}
SNIPPET_CHARS = 300
MAX_WAIT_S = 60.0
USER_AGENT = f"drsearch/{__version__} (openbiorq openness evidence; one request per route at a time)"


class RateLimiter:
    """At most one call per ``min_interval_s`` (thread-safe; waits rather than refuses)."""

    def __init__(self, min_interval_s: float) -> None:
        self.min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.min_interval_s
        if delay > 0:
            time.sleep(delay)


class Gatherer:
    """Stage 1 for one stage run: HTTP clients, limiters, and the bundle of one item."""

    def __init__(self, ctx: StageContext, routes: Mapping[str, str], k: int, min_interval_s: float,
                 transport: httpx.BaseTransport | None = None, *, max_attempts: int = 5,
                 backoff_s: float = 1.0, s2_api_key: str | None = None) -> None:
        self.ctx = ctx
        self.routes = dict(routes)
        self.k = k
        self.retry = RetryPolicy(max_attempts=max(1, max_attempts), backoff_s=backoff_s,
                                 backoff_max_s=MAX_WAIT_S, retry_after_max_s=MAX_WAIT_S, timeout_s=30.0)
        # Semantic Scholar's key goes in a header: never in a URL, the cache key or the bundle
        self.headers = {"s2": {"x-api-key": s2_api_key}} if s2_api_key else {}
        self.client = httpx.Client(timeout=self.retry.timeout_s, transport=transport, follow_redirects=False,
                                   headers={"accept": "application/json", "user-agent": USER_AGENT})
        # the public APIs are rate-limited; our own search server is not
        self.limiters = {name: RateLimiter(0.0 if name == "corpus" else min_interval_s)
                         for name in self.routes}

    def close(self) -> None:
        self.client.close()

    def _get(self, route: str, method: str, url: str, body: dict[str, Any] | None,
             responses: list[dict[str, Any]]) -> Any:
        """The JSON answer of one request (None for a 404), recorded in ``responses``."""
        def attempt(_: int) -> tuple[bool, bytes]:
            self.limiters[route].wait()
            try:
                r = self.client.request(method, url, json=body, headers=self.headers.get(route))
            except httpx.TransportError as e:
                raise TryAgain(f"{e.__class__.__name__}: {e}") from None
            except httpx.HTTPError as e:  # not worth another try (e.g. a malformed URL)
                raise GenerateError(f"evidence route {route}: {method} {url}: "
                                    f"{e.__class__.__name__}: {e}") from None
            if r.status_code in (200, 404):
                return r.status_code == 200, r.content
            again = transient_answer(r.status_code, r.headers)
            if again is None:
                raise GenerateError(f"evidence route {route}: {method} {url}: HTTP {r.status_code}")
            raise again

        def live() -> tuple[bool, bytes]:
            try:
                return retry(attempt, self.retry)
            except GaveUp as e:
                raise GenerateError(f"evidence route {route}: {method} {url}: {e.last.reason} "
                                    f"(after {e.attempts} attempt(s))") from None

        ok, data = self.ctx.fetch("evidence", [route, method, url, body], f"{route} {method} {url}", live)
        responses.append({"body_sha256": sha256_hex(data), "method": method, "ok": ok, "request": body,
                          "route": route, "url": url})
        if not ok:
            return None
        try:
            return json.loads(data)
        except ValueError:
            raise GenerateError(f"evidence route {route}: {method} {url}: the answer is not JSON") from None

    def bundle(self, item: dict[str, Any]) -> dict[str, Any]:
        """``{evidence: [{id, route, title, snippet, url}], responses: [...]}`` for ``item``."""
        evidence: list[dict[str, Any]] = []
        responses: list[dict[str, Any]] = []
        seen: set[str] = set()

        def add(eid: str, route: str, title: str, snippet: str, url: str | None) -> None:
            if eid not in seen:
                seen.add(eid)
                evidence.append({"id": eid, "route": route, "snippet": snippet[:SNIPPET_CHARS],
                                 "title": title, "url": url})

        if "corpus" in self.routes:
            for query in (item["title"], item["question"]):
                answer = self._get("corpus", "POST", self.routes["corpus"].rstrip("/") + "/search",
                                   {"k": self.k, "query": query}, responses)
                for hit in (answer or {}).get("results", []):
                    add(f"corpus:{hit['docid']}", "corpus", hit.get("title") or "", hit.get("snippet") or "",
                        hit.get("url"))
        route = ROUTE_OF_KIND.get(item["id_kind"])
        if route in self.routes:
            _PARSERS[route](self, item, responses, add)
        return {"evidence": evidence, "responses": responses}


Add = Callable[[str, str, str, str, "str | None"], None]


def _europepmc(g: Gatherer, item: dict[str, Any], responses: list[dict[str, Any]], add: Add) -> None:
    pmid = item["source_id"].removeprefix("PMID:")
    url = f"{g.routes['europepmc'].rstrip('/')}/MED/{pmid}/citations?format=json&page=1&pageSize={g.k}"
    answer = g._get("europepmc", "GET", url, None, responses) or {}
    for c in (answer.get("citationList") or {}).get("citation", []):
        add(f"europepmc:{c.get('source', 'MED')}:{c['id']}", "europepmc", c.get("title") or "",
            f"{c.get('title') or ''} ({c.get('journalAbbreviation') or ''} {c.get('pubYear') or ''})".strip(),
            None)


def _ctgov(g: Gatherer, item: dict[str, Any], responses: list[dict[str, Any]], add: Add) -> None:
    nct = item["source_id"]
    url = f"{g.routes['ctgov'].rstrip('/')}/studies/{nct}?format=json"
    answer = g._get("ctgov", "GET", url, None, responses)
    if answer is None:
        return
    status = (answer.get("protocolSection") or {}).get("statusModule") or {}
    completion = (status.get("completionDateStruct") or {}).get("date")
    snippet = (f"overall status {status.get('overallStatus')}; completion {completion}; "
               f"results posted: {'yes' if answer.get('hasResults') else 'no'}")
    add(f"ctgov:{nct}", "ctgov", item["title"], snippet, None)


def s2_citations_url(base: str, source_id: str, k: int) -> str:
    """Semantic Scholar's citations of an ``arXiv:`` source. The id is normalised as citations
    normalise it (:func:`~drsearch.benchmark.citations.arxiv_id`): the graph API looks papers up
    by the bare arXiv id, so a version suffix (``v2``) or an old id's subject class would miss."""
    raw = source_id.removeprefix("arXiv:")
    # Sources are validated as arXiv ids when read (sources.py), so the fallback never applies there.
    return (f"{base.rstrip('/')}/paper/arXiv:{arxiv_id(raw) or raw}/citations"
            f"?fields=title,year,externalIds&limit={k}")


def _s2(g: Gatherer, item: dict[str, Any], responses: list[dict[str, Any]], add: Add) -> None:
    url = s2_citations_url(g.routes["s2"], item["source_id"], g.k)
    answer = g._get("s2", "GET", url, None, responses) or {}
    for c in answer.get("data", []):
        paper = c.get("citingPaper") or {}
        if paper.get("paperId"):
            add(f"s2:{paper['paperId']}", "s2", paper.get("title") or "",
                f"{paper.get('title') or ''} ({paper.get('year') or ''})", None)


_PARSERS: dict[str, Callable[[Gatherer, dict[str, Any], list[dict[str, Any]], Add], None]] = {
    "ctgov": _ctgov, "europepmc": _europepmc, "s2": _s2}

__all__ = ["MAX_WAIT_S", "PUBLIC_APIS", "RETRY_STATUSES", "ROUTE_OF_KIND", "USER_AGENT", "Gatherer",
           "RateLimiter", "s2_citations_url"]
