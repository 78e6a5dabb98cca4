"""``HybridRetriever``: BM25 and dense fused, deterministic.

Each list is the ``depth`` best documents of its retriever (BM25: ``Engine.rank``; dense:
``DenseRetriever.rank``; blocked documents in neither). Two fusions:

- ``rrf``: a document's fused score is ``1/(k + rank_bm25) + 1/(k + rank_dense)`` (a term only
  for each list it is in; ranks from 1, ``k`` = 60 as Cormack et al.), added in that order.
- ``linear`` (weight W): each list's scores are min-max normalised over that list,
  ``(s − min) / (max − min)`` (1.0 for every entry of a list whose scores are all equal), a
  document absent from a list counts 0 there, and the fused score is
  ``W · dense + (1 − W) · bm25``, multiplied and added in that order.

All in float64, so the same lists give the same bits. Order: fused score descending, then the
lower chunk rowid of the chunk shown — the document's BM25 best chunk where BM25 found it (its
snippet marks the query's words), else its dense best chunk.
"""

from __future__ import annotations

from typing import Any

from ..contract import MAX_RUN_K, InvalidInputError, check_k
from .over_engine import OverEngine
from .retriever import DenseRetriever

RRF_K = 60
DEFAULT_DEPTH = 100
NORMALISATION = "minmax"


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


def _minmax(ranked: list[tuple[int, float]]) -> list[float]:
    """Each score of ``ranked`` min-max normalised over the list (all equal: 1.0 each)."""
    if not ranked:
        return []
    lo, hi = min(s for _, s in ranked), max(s for _, s in ranked)
    if not hi > lo:
        return [1.0] * len(ranked)
    return [(s - lo) / (hi - lo) for _, s in ranked]


def linear(bm25: list[tuple[int, float]], dense: list[tuple[int, float]], chunk_doc: Any, k: int,
           weight: float) -> list[tuple[int, float]]:
    """The ``k`` best documents of the ranked (chunk rowid, score) lists fused by
    ``weight · dense + (1 − weight) · bm25`` of their min-max normalised scores (module
    docstring), as (shown chunk rowid, fused score); a document's chunk is BM25's if it has one."""
    parts: dict[int, list[Any]] = {}  # document rowid -> [bm25 part, dense part, chunk]
    for chunk, norm in zip((c for c, _ in bm25), _minmax(bm25), strict=True):
        parts[int(chunk_doc[chunk])] = [norm, 0.0, chunk]
    for chunk, norm in zip((c for c, _ in dense), _minmax(dense), strict=True):
        entry = parts.setdefault(int(chunk_doc[chunk]), [0.0, 0.0, chunk])
        entry[1] = norm
    fused = [(weight * d + (1.0 - weight) * b, chunk) for b, d, chunk in parts.values()]
    fused.sort(key=lambda e: (-e[0], e[1]))
    return [(int(chunk), float(score)) for score, chunk in fused[:k]]


class HybridRetriever(OverEngine):
    """BM25 and dense fused (``fusion`` ``rrf``, or ``linear`` with the dense ``weight``) over
    ``dense``'s engine; owns ``dense`` (``close``)."""

    kind = "hybrid"

    def __init__(self, dense: DenseRetriever, depth: int = DEFAULT_DEPTH, rrf_k: int = RRF_K, *,
                 fusion: str = "rrf", weight: float | None = None) -> None:
        self.depth = check_k(depth, MAX_RUN_K)
        self.rrf_k = rrf_k
        self.dense = dense
        if fusion == "rrf":
            self.fusion: dict[str, Any] = {"method": "rrf", "k": rrf_k, "depth": self.depth}
            config = f"hybrid:rrf:k={rrf_k}:depth={self.depth}"
        elif fusion == "linear" and weight is not None and 0.0 <= weight <= 1.0:
            self.fusion = {"method": "linear", "weight": weight, "normalisation": NORMALISATION,
                           "depth": self.depth}
            config = f"hybrid:linear:w={weight!r}:norm={NORMALISATION}:depth={self.depth}"
        else:
            raise InvalidInputError(f"hybrid fusion {fusion!r} (weight {weight!r}): not rrf or linear=W "
                                    "with W in [0, 1]")
        self.weight = weight
        super().__init__(dense.engine, f"{config}:{dense.config}")

    def rank(self, query: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` best chunks by the fused score (module docstring); only the first ``depth``
        of each list count, so beyond ``depth`` documents a result may hold fewer than ``k``."""
        bm25 = self.engine.rank(query, self.depth, max_k=self.depth)
        dense = self.dense.rank(query, self.depth)
        if self.fusion["method"] == "rrf":
            return rrf([bm25, dense], self.engine.chunk_documents, k, self.rrf_k)
        assert self.weight is not None
        return linear(bm25, dense, self.engine.chunk_documents, k, self.weight)

    def stats(self) -> dict[str, Any]:
        body = self.dense.stats()
        body["scorer"] = self.kind
        body["retriever"] = {**body["retriever"], "kind": self.kind, "config": self.config,
                             "fusion": dict(self.fusion)}
        return body

    def close(self) -> None:
        self.dense.close()


__all__ = ["DEFAULT_DEPTH", "NORMALISATION", "RRF_K", "HybridRetriever", "linear", "rrf"]
