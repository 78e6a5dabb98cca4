"""The ``Searcher`` protocol: what agents call to search and open, whatever serves it.

docs/DESIGN.md places the protocol in the engine layer so every implementation speaks it: the
in-process engine and the HTTP client of our server (``drsearch.agents.searcher``) and the
replay cache (``drsearch.agents.replay``) are interchangeable. Every answer is the exact
bytes of the HTTP API's response body: canonical JSON (``contract.canonical_json``) of
``SearchResult.to_dict()`` / ``Document.to_dict()``, or ``contract.error_body``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .errors import BlocklistError

# Every response of ``drsearch serve`` carries this header (see ``CorpusInfo.fleet_identity``):
# replicas behind a load balancer that answer with different values serve different
# corpora or blocklists, and a client that mixed their answers would be wrong silently.
IDENTITY_HEADER = "x-drsearch-identity"


def fleet_identity(corpus_identity: str, blocklist_sha256: str, retriever: str | None = None) -> str:
    """The ``x-drsearch-identity`` value: ``<corpus identity>:<blocklist SHA-256>``, then
    ``:<retriever configuration>`` for any retriever but BM25 (whose value it leaves as it
    was), so a client notices a replica that ranks another way."""
    if retriever is None or retriever == "bm25":
        return f"{corpus_identity}:{blocklist_sha256}"
    return f"{corpus_identity}:{blocklist_sha256}:{retriever}"


@dataclass(frozen=True, slots=True)
class CorpusInfo:
    """What a searcher serves: the corpus content identity and the blocklist's SHA-256,
    and (where the searcher reports them) how many docids the blocklist lists and how
    many of them are documents of the corpus (None: not reported, e.g. a replay)."""

    identity: str
    blocklist_sha256: str
    blocklist_count: int | None = None
    blocklist_matched: int | None = None
    # where the blocklist came from (drsearch.index.releases.Origin) and, for a release's
    # database, the SHA-256 of the release's own list (None: not reported)
    blocklist_origin: str | None = None
    release_blocklist_sha256: str | None = None
    retriever: str | None = None  # a retriever's configuration (None: BM25)

    @property
    def fleet_identity(self) -> str:
        """The ``x-drsearch-identity`` header value a server of this corpus sends."""
        return fleet_identity(self.identity, self.blocklist_sha256, self.retriever)

    def check_blocklist_complete(self, where: str) -> None:
        """Raise BlocklistError when ``where`` (a server) reports a blocklist naming docids
        its corpus lacks: it hides less than it lists (see ``Engine.check_blocklist_complete``)."""
        count, matched = self.blocklist_count, self.blocklist_matched
        if count is not None and matched is not None and matched < count:
            raise BlocklistError(f"{where} serves a blocklist of {count} docids, {matched} in its corpus "
                                 "(--allow-missing-blocked if the corpus is deliberately partial)")


@dataclass(frozen=True, slots=True)
class ToolResponse:
    """One backend answer: ``ok`` false for an error body; ``body`` the exact bytes."""

    ok: bool
    body: bytes


@runtime_checkable
class Searcher(Protocol):
    """A search backend the agent's tools call. Implementations must be thread-safe."""

    def corpus(self) -> CorpusInfo:
        """Identity of what is served (cache keys and run.json record it)."""
        ...

    def search(self, query: str, k: int) -> ToolResponse:
        """``POST /search {query, k}``."""
        ...

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        """``POST /open {docid | url, offset, length}``."""
        ...


__all__ = ["IDENTITY_HEADER", "CorpusInfo", "Searcher", "ToolResponse", "fleet_identity"]
