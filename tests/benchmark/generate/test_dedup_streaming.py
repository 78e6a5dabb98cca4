"""The near-duplicate walk streams in blocks: the same result as the all-pairs walk it
replaced (kept here as the reference), in memory that does not grow with n²."""

from __future__ import annotations

import tracemalloc
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from drsearch.benchmark.generate.dedup import DedupResult, Duplicate, dedup
from drsearch.benchmark.generate.similarity import DECIMALS, cosine_matrix


def all_pairs(ids: Sequence[Any], vectors: Any, tau: float = 0.90, review_margin: float = 0.01) -> DedupResult:
    """The walk as it was: the full n × n cosine matrix, then every item against every kept one."""
    sims = cosine_matrix(vectors)
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


def clustered(n: int, d: int, seed: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    """Random float32 embeddings in tight clusters: many duplicates, many pairs near τ, some exact ties."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(1, n // 6), d))
    v = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=0.33, size=(n, d))
    v[5::17] = v[4::17][: len(v[5::17])]  # exact copies: ties between kept items
    out: np.ndarray[Any, np.dtype[np.float32]] = v.astype(np.float32)
    return out


@pytest.mark.parametrize(("n", "d", "tau", "block"), [(600, 16, 0.90, 8_000_000), (600, 16, 0.90, 1_000),
                                                      (900, 8, 0.80, 5_000), (300, 4, 0.95, 1)])
def test_blocks_give_exactly_the_all_pairs_walk(n: int, d: int, tau: float, block: int) -> None:
    vectors = clustered(n, d, seed=n + d)
    ids = [f"item-{i:04d}" for i in range(n)]
    expected = all_pairs(ids, vectors, tau)
    got = dedup(ids, vectors, tau=tau, block_elements=block)
    assert expected.duplicates and expected.review and expected.kept  # the case exercises every branch
    assert got == expected


def test_memory_does_not_grow_with_n_squared() -> None:
    """5,000 items: the all-pairs walk holds 3 × 200 MB of cosines; the blocks stay near their budget."""
    n, d, block = 5_000, 16, 250_000  # 2 MB of cosines per block
    vectors = clustered(n, d, seed=1)
    ids = list(range(n))
    tracemalloc.start()
    try:
        result = dedup(ids, vectors, block_elements=block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.kept and result.duplicates
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
