"""Diversity filter (DrBencher): remove nodes of the similarity graph until no edge is left.

δ(a, b) = 1 − cos(a, b) (cosines rounded as :mod:`.similarity` says, δ rounded likewise);
an edge joins a and b iff δ < τd (default 0.30, strictly). Repeatedly remove the node
with the most edges among the remaining ones; ties go to the node with the smaller total
dissimilarity to its remaining neighbours (summed exactly with ``math.fsum``), then to the
larger id. Stop when no edge remains. The survivors are pairwise δ >= τd; the removal
order is recorded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .similarity import DECIMALS, check_ids, cosine_matrix

DEFAULT_TAU_D = 0.30


@dataclass(frozen=True)
class DiversityResult:
    survivors: tuple[Any, ...]
    """In input order."""
    removed: tuple[Any, ...]
    """In removal order."""
    tau_d: float

    def as_dict(self) -> dict[str, Any]:
        return {"removed": list(self.removed), "survivors": list(self.survivors), "tau_d": self.tau_d}


def dissimilarity_matrix(vectors: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
    out: np.ndarray[Any, np.dtype[np.float64]] = np.round(1.0 - cosine_matrix(vectors), DECIMALS)
    return out


def diversify(ids: Sequence[Any], vectors: Any, *, tau_d: float = DEFAULT_TAU_D) -> DiversityResult:
    """Greedy max-degree removal until every remaining pair has δ >= ``tau_d``."""
    check_ids(ids)
    n = len(ids)
    if n == 0:
        return DiversityResult((), (), tau_d)
    delta = dissimilarity_matrix(vectors)
    if delta.shape[0] != n:
        raise ValueError(f"{delta.shape[0]} vectors for {n} ids")
    adjacent = delta < tau_d
    np.fill_diagonal(adjacent, False)
    alive = np.ones(n, dtype=bool)
    degree = adjacent.sum(axis=1)
    removed: list[int] = []
    while True:
        live_degree = np.where(alive, degree, -1)
        top = int(live_degree.max())
        if top <= 0:
            break
        candidates = [int(i) for i in np.flatnonzero(live_degree == top)]

        def rank(i: int) -> tuple[float, Any]:
            neighbours = np.flatnonzero(adjacent[i] & alive)
            total = math.fsum(float(delta[i, j]) for j in neighbours)
            return total, _Desc(ids[i])

        victim = min(candidates, key=rank)
        alive[victim] = False
        removed.append(victim)
        degree -= adjacent[victim]
    return DiversityResult(tuple(ids[i] for i in range(n) if alive[i]), tuple(ids[i] for i in removed), tau_d)


class _Desc:
    """Reverses the order of an id, so ``min`` picks the larger id."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Desc) -> bool:
        return bool(other.value < self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and bool(self.value == other.value)

    __hash__ = None  # type: ignore[assignment]


__all__ = ["DEFAULT_TAU_D", "DiversityResult", "dissimilarity_matrix", "diversify"]
