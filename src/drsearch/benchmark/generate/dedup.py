"""Near-duplicate filter (OpenBioRQ): a greedy walk over items in a stated order.

Items are visited in the order given (callers pass a stable one, e.g. sorted by id); an
item is a duplicate iff its cosine with an already-kept item is >= τ (default 0.90,
boundary included; cosines rounded as :mod:`.similarity` says). It is then recorded
with ``duplicate_of`` = the kept item it is most similar to (ties: the one kept first)
and is not kept, so it can never absorb later items. Every comparison with a kept
item whose cosine lies within ±``review_margin`` (0.01) of τ is listed for review.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .similarity import DECIMALS, check_ids, cosine_matrix

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


def dedup(ids: Sequence[Any], vectors: Any, *, tau: float = DEFAULT_TAU,
          review_margin: float = REVIEW_MARGIN) -> DedupResult:
    """Walk ``ids`` in order; keep an item unless its cosine with a kept one is >= ``tau``."""
    check_ids(ids)
    if not -1.0 <= tau <= 1.0:
        raise ValueError(f"tau must be in [-1, 1], got {tau}")
    if not ids:
        return DedupResult((), (), (), tau)
    sims = cosine_matrix(vectors)
    if sims.shape[0] != len(ids):
        raise ValueError(f"{sims.shape[0]} vectors for {len(ids)} ids")
    kept: list[int] = []
    duplicates: list[Duplicate] = []
    review: list[tuple[Any, Any, float]] = []
    for i in range(len(ids)):
        best: int | None = None
        for j in kept:
            c = float(sims[i, j])
            if round(abs(c - tau), DECIMALS) <= review_margin:
                review.append((ids[i], ids[j], c))
            if c >= tau and (best is None or c > sims[i, best]):
                best = j
        if best is None:
            kept.append(i)
        else:
            duplicates.append(Duplicate(ids[i], ids[best], float(sims[i, best])))
    return DedupResult(tuple(ids[k] for k in kept), tuple(duplicates), tuple(review), tau)


__all__ = ["DEFAULT_TAU", "REVIEW_MARGIN", "DedupResult", "Duplicate", "dedup"]
