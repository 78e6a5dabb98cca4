"""V2's corpus over HTTP: ``drsearch serve`` as a child process, and the searcher V2's
episodes use (docs/GENERATE.md, "The DrBencher-style generator").

V2 searches exactly as ``drsearch run --search URL`` does: an :class:`HttpSearcher` (the
agents layer's client, which fixes the server's ``x-drsearch-identity`` on its first answer and
refuses any later answer under another one) behind the pipeline's replay cache. Before the
first episode the served corpus is checked against the corpus the run names (its identity,
blocklist SHA-256 and retriever, :mod:`.v2corpus`): a server of another corpus or blocklist
is refused by name, never searched. A replay asks no server: the cache answers, keyed by the
named corpus's identity.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ....agents import HttpSearcher, SearcherError
from ....contract import CorpusInfo, InvalidInputError, ToolResponse
from ....contract.retry import RetryPolicy
from ..errors import GenerateError

SERVE_START_S = 60.0
"""How long a started ``drsearch serve`` may take to answer ``/health``."""


@contextmanager
def drsearch_serve(database: Path) -> Iterator[str]:
    """``drsearch serve --database DATABASE`` (1 worker, a free loopback port) for the ``with``
    block, through the server layer's :class:`~drsearch.server.ServeProcess`: yields its base
    URL once ``/health`` answers 200, and stops it on exit. GenerateError, with the tail of its
    log, when it exits or does not answer within :data:`SERVE_START_S`."""
    # Imported here: the server layer imports FastAPI, which only a V2 run that serves needs.
    from ....server import ServeError, ServeProcess

    try:
        server = ServeProcess(database, start_timeout_s=SERVE_START_S).start()
    except ServeError as e:
        raise GenerateError(e.message) from None
    with server:
        yield server.url


def probe_search_server(search_url: str) -> CorpusInfo:
    """``GET /health`` of ``search_url`` once (a run's probe, before anything is written): what
    it serves; InvalidInputError (exit 2) when it does not answer as a drsearch server."""
    once = RetryPolicy(max_attempts=1, timeout_s=10.0)  # a probe: one answer decides
    http = HttpSearcher(httpx.Client(base_url=search_url.rstrip("/"), timeout=once.timeout_s), retry=once)
    try:
        return http.corpus()
    except SearcherError as e:
        raise InvalidInputError(f"v2.search_url {search_url}: the search server is not usable "
                                f"({e.message})") from None
    finally:
        http.close()


def check_served(search_url: str, served: CorpusInfo, named: CorpusInfo, what: str) -> None:
    """InvalidInputError (exit 2), naming both identities, unless ``served`` is ``named``."""
    if served.fleet_identity != named.fleet_identity:
        raise InvalidInputError(
            f"v2: {search_url} serves corpus {served.identity} with blocklist {served.blocklist_sha256}, "
            f"not {what}: corpus {named.identity} with blocklist {named.blocklist_sha256}")


@contextmanager
def served_searcher(search_url: str, named: CorpusInfo, what: str) -> Iterator[HttpSearcher]:
    """An :class:`HttpSearcher` of ``search_url`` once its ``/health`` names the corpus the run
    names (``what`` describes it): InvalidInputError (exit 2) naming both identities otherwise,
    GenerateError when the server does not answer."""
    http = HttpSearcher.connect(search_url)
    try:
        try:
            served = http.corpus()
        except SearcherError as e:
            raise GenerateError(f"v2: the search server {search_url} does not answer ({e.message})") from None
        check_served(search_url, served, named, what)
        yield http
    finally:
        http.close()


class RecordedCorpus:
    """The searcher of a replay: the named corpus's identity, no backend (the replay
    cache answers every call; it never calls these)."""

    def __init__(self, corpus: CorpusInfo) -> None:
        self._corpus = corpus

    def corpus(self) -> CorpusInfo:
        return self._corpus

    def search(self, query: str, k: int) -> ToolResponse:
        raise GenerateError("v2: a replay searched live (the replay cache should have answered)")

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        raise GenerateError("v2: a replay opened live (the replay cache should have answered)")


__all__ = ["SERVE_START_S", "RecordedCorpus", "check_served", "drsearch_serve", "probe_search_server",
           "served_searcher"]
