"""Near-duplicate filter (OpenBioRQ): a greedy walk over items in a stated order.

Items are visited in the order given (callers pass a stable one, e.g. sorted by id); an
item is a duplicate iff its cosine with an already-kept item is >= τ (default 0.90,
boundary included; cosines rounded as :mod:`.similarity` says). It is then recorded
with ``duplicate_of`` = the kept item it is most similar to (ties: the one kept first)
and is not kept, so it can never absorb later items. Every comparison with a kept
item whose cosine lies within ±``review_margin`` (0.01) of τ is listed for review.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .similarity import DECIMALS, as_matrix, check_ids

DEFAULT_TAU = 0.90
REVIEW_MARGIN = 0.01


@dataclass(frozen=True)
class Duplicate:
    id: Any
    duplicate_of: Any
    cosine: float


@dataclass(frozen=True)
class DedupResult:
    kept: tuple[Any, ...]
    duplicates: tuple[Duplicate, ...]
    review: tuple[tuple[Any, Any, float], ...]
    """``(item, kept item, cosine)`` pairs within the review margin of τ, in walk order."""
    tau: float

    def as_dict(self) -> dict[str, Any]:
        return {"duplicates": [{"cosine": d.cosine, "duplicate_of": d.duplicate_of, "id": d.id}
                               for d in self.duplicates],
                "kept": list(self.kept), "review": [{"a": a, "b": b, "cosine": c} for a, b, c in self.review],
                "tau": self.tau}


BLOCK_ELEMENTS = 8_000_000
"""Cosines computed at once (a block of items × the items kept before it): 64 MB of float64,
about five times that with the temporaries, whatever the number of items. Larger blocks read
the kept vectors fewer times (one pass per block); this keeps 100,000 items near 1 GB."""
MAX_BLOCK = 1024
"""Items per block at most (their cosines with each other: 8 MB)."""


def dedup(ids: Sequence[Any], vectors: Any, *, tau: float = DEFAULT_TAU,
          review_margin: float = REVIEW_MARGIN, block_elements: int = BLOCK_ELEMENTS) -> DedupResult:
    """Walk ``ids`` in order; keep an item unless its cosine with a kept one is >= ``tau``.

    Streamed in blocks of items: each block's cosines with the items kept before it are one
    matrix product of at most ``block_elements`` cells, then the block is walked in order
    against those and the items it keeps itself. Memory is the vectors (twice: all of them and
    the kept ones, as float64) plus one block, never the n × n matrix (20 GB at 50,000 items):
    100,000 items of 384 dimensions stay under 1 GB. The result is what the all-pairs walk
    gives: every cosine is the same rounded dot product (:mod:`.similarity`)."""
    check_ids(ids)
    if not -1.0 <= tau <= 1.0:
        raise ValueError(f"tau must be in [-1, 1], got {tau}")
    if not ids:
        return DedupResult((), (), (), tau)
    m = as_matrix(vectors, len(ids))
    n = len(ids)
    kept_rows = np.empty_like(m)  # the kept items' vectors, in walk order
    kept: list[int] = []
    duplicates: list[Duplicate] = []
    review: list[tuple[Any, Any, float]] = []
    start = 0
    side = min(math.isqrt(block_elements), MAX_BLOCK)  # the block's cosines with itself fit too
    while start < n:
        rows = max(1, min(n - start, block_elements // max(1, len(kept)), side))
        block = m[start:start + rows]
        before = len(kept)
        sims = _rounded(block @ kept_rows[:before].T)  # rows × the items kept before the block
        # a superset of the pairs in the review margin; each is then decided as the walk decides it
        near = np.abs(sims - tau) <= review_margin + 10.0 ** -DECIMALS
        over = np.where(sims >= tau, sims, -np.inf)
        inner = _rounded(block @ block.T)  # the block's items with each other
        inside: list[int] = []  # offsets in the block of the items it keeps
        for r in range(rows):
            i = start + r
            for col in np.flatnonzero(near[r]):
                c = float(sims[r, col])
                if round(abs(c - tau), DECIMALS) <= review_margin:
                    review.append((ids[i], ids[kept[int(col)]], c))
            best, best_c = None, -np.inf
            if before:
                j = int(np.argmax(over[r]))  # the first of the highest: the one kept first
                if over[r, j] >= tau:
                    best, best_c = kept[j], float(over[r, j])
            if inside:
                offsets = np.asarray(inside)
                cs = inner[r, offsets]
                close = np.abs(cs - tau) <= review_margin + 10.0 ** -DECIMALS
                for q, c in zip(offsets[close], cs[close], strict=True):
                    if round(abs(float(c) - tau), DECIMALS) <= review_margin:
                        review.append((ids[i], ids[start + int(q)], float(c)))
                at = np.where(cs >= tau, cs, -np.inf)
                k = int(np.argmax(at))
                if at[k] >= tau and float(at[k]) > best_c:  # a tie goes to the one kept first
                    best, best_c = start + int(offsets[k]), float(at[k])
            if best is None:
                inside.append(r)
            else:
                duplicates.append(Duplicate(ids[i], ids[best], best_c))
        for q in inside:
            kept_rows[len(kept)] = block[q]
            kept.append(start + q)
        start += rows
    return DedupResult(tuple(ids[k] for k in kept), tuple(duplicates), tuple(review), tau)


def _rounded(dots: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Cosines of unit vectors as :func:`.similarity.cosine_matrix` gives them."""
    np.clip(dots, -1.0, 1.0, out=dots)  # in place: the block is the memory that counts
    return np.round(dots, DECIMALS, out=dots)


__all__ = ["BLOCK_ELEMENTS", "DEFAULT_TAU", "REVIEW_MARGIN", "DedupResult", "Duplicate", "dedup"]
