"""``HybridRetriever``: reciprocal-rank fusion of BM25 and dense, deterministic.

Each list is the ``depth`` best documents of its retriever (BM25: ``Engine.rank``; dense:
``DenseRetriever.rank``; blocked documents in neither). A document's fused score is
``1/(k + rank_bm25) + 1/(k + rank_dense)`` (a term only for each list it is in; ranks from
1, ``k`` = 60 as Cormack et al.), added in that order in float64, so the same lists give the
same bits. Order: fused score descending, then the lower chunk rowid of the chunk shown — the
document's BM25 best chunk where BM25 found it (its snippet marks the query's words), else its
dense best chunk.
"""

from __future__ import annotations

from typing import Any

from ..contract import MAX_RUN_K, check_k
from .over_engine import OverEngine
from .retriever import DenseRetriever

RRF_K = 60
DEFAULT_DEPTH = 100


def rrf(lists: list[list[tuple[int, float]]], chunk_doc: Any, k: int,
        rrf_k: int = RRF_K) -> list[tuple[int, float]]:
    """The ``k`` best documents of ranked (chunk rowid, score) ``lists`` fused by reciprocal
    rank, as (shown chunk rowid, fused score); a document's chunk is its first list's."""
    fused: dict[int, list[Any]] = {}  # document rowid -> [score, chunk]
    for ranked in lists:
        for rank, (chunk, _) in enumerate(ranked, 1):
            doc = int(chunk_doc[chunk])
            entry = fused.get(doc)
            if entry is None:
                fused[doc] = [1.0 / (rrf_k + rank), chunk]
            else:
                entry[0] += 1.0 / (rrf_k + rank)
    order = sorted(fused.values(), key=lambda e: (-e[0], e[1]))
    return [(int(chunk), float(score)) for score, chunk in order[:k]]


class HybridRetriever(OverEngine):
    """BM25 and dense fused by RRF over ``dense``'s engine; owns ``dense`` (``close``)."""

    kind = "hybrid"

    def __init__(self, dense: DenseRetriever, depth: int = DEFAULT_DEPTH, rrf_k: int = RRF_K) -> None:
        self.depth = check_k(depth, MAX_RUN_K)
        self.rrf_k = rrf_k
        self.dense = dense
        super().__init__(dense.engine, f"hybrid:rrf:k={rrf_k}:depth={self.depth}:{dense.config}")

    def rank(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunks by fused rank (module docstring); only the first ``depth`` of
        each list count, so beyond ``depth`` documents a result may hold fewer than ``k``."""
        lists = [self.engine.rank(query, self.depth, max_k=self.depth), self.dense.rank(query, self.depth)]
        return rrf(lists, self.engine.chunk_documents, k, self.rrf_k)

    def stats(self) -> dict[str, Any]:
        body = self.dense.stats()
        body["scorer"] = self.kind
        body["retriever"] = {**body["retriever"], "kind": self.kind, "config": self.config,
                             "fusion": {"method": "rrf", "k": self.rrf_k, "depth": self.depth}}
        return body

    def close(self) -> None:
        self.dense.close()


__all__ = ["DEFAULT_DEPTH", "RRF_K", "HybridRetriever", "rrf"]
