"""Near-duplicate and diversity filters on hand-made vectors with known answers, and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from drsearch.benchmark.generate.dedup import dedup
from drsearch.benchmark.generate.diversity import dissimilarity_matrix, diversify
from drsearch.benchmark.generate.similarity import cosine_matrix


def at_cosine(c: float) -> list[float]:
    """A 2-d unit vector whose cosine with (1, 0) is ``c``."""
    return [c, math.sqrt(1.0 - c * c)]


def test_cosine_exactly_tau_collapses_and_just_below_does_not() -> None:
    # (-3, -1, 0) . (-3, 0, -1) = 9 and both norms are sqrt(10): the cosine is exactly 0.9, yet
    # plain float64 normalise-then-dot gives 0.8999999999999999; the rounded cosine keeps it 0.9
    a, b = np.array([-3.0, -1.0, 0.0]), np.array([-3.0, 0.0, -1.0])
    assert float((a / np.linalg.norm(a)) @ (b / np.linalg.norm(b))) < 0.9
    result = dedup(["a", "b"], np.stack([a, b]))
    assert result.kept == ("a",) and result.duplicates[0].duplicate_of == "a"
    assert result.duplicates[0].cosine == 0.9
    below = dedup(["a", "c"], np.array([[1.0, 0.0], at_cosine(0.8999)]))
    assert below.kept == ("a", "c") and below.duplicates == ()


def test_a_duplicate_points_at_its_most_similar_kept_item_and_absorbs_nothing() -> None:
    # b is 0.8 from a (kept); c is 0.96 from a and 0.936 from b: duplicate of a (the most similar);
    # d is 0.96 from a too, and only 0.84 from c, which was dropped and absorbs nothing
    a = np.array([1.0, 0.0, 0.0])
    b = np.array([0.8, 0.6, 0.0])
    c = np.array([0.96, 0.28, 0.0])  # cos(a, c) = 0.96, cos(b, c) = 0.936
    d = np.array([0.96, -0.28, 0.0])  # cos(a, d) = 0.96, cos(c, d) = 0.8432
    result = dedup(["a", "b", "c", "d"], np.stack([a, b, c, d]))
    assert result.kept == ("a", "b")
    assert [(x.id, x.duplicate_of) for x in result.duplicates] == [("c", "a"), ("d", "a")]
    result = dedup(["b", "c", "a"], np.stack([b, c, a]))  # another order, other decisions
    assert result.kept == ("b", "a") and result.duplicates[0].duplicate_of == "b"


def test_pairs_near_tau_are_listed_for_review() -> None:
    vectors = np.array([[1.0, 0.0], at_cosine(0.905), at_cosine(0.88), at_cosine(0.5)])
    result = dedup(["a", "b", "c", "d"], vectors)
    assert [(a, b) for a, b, _ in result.review] == [("b", "a")]  # 0.905 within ±0.01; 0.88 not
    boundary = dedup(["a", "b"], np.array([[1.0, 0.0], at_cosine(0.89)]))
    assert len(boundary.review) == 1 and boundary.kept == ("a", "b")  # exactly 0.01 below: listed


def test_bad_vectors_are_refused() -> None:
    with pytest.raises(ValueError, match="zero"):
        dedup(["a", "b"], np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="duplicate ids"):
        dedup(["a", "a"], np.eye(2))
    with pytest.raises(ValueError, match="2 vectors for 3 ids"):
        dedup(["a", "b", "c"], np.eye(2))


def test_diversity_removes_the_hub_first() -> None:
    # a star: hub h within δ < 0.3 of each leaf; leaves pairwise far apart. Removing h alone ends it.
    hub = np.array([1.0, 1.0, 1.0]) / math.sqrt(3)
    leaves = [np.array([1.0, 0.35, 0.35]), np.array([0.35, 1.0, 0.35]), np.array([0.35, 0.35, 1.0])]
    vectors = np.stack([hub, *leaves])
    delta = dissimilarity_matrix(vectors)
    assert all(delta[0, i] < 0.3 for i in (1, 2, 3)) and all(delta[i, j] >= 0.3 for i in (1, 2) for j in (2, 3)
                                                             if i != j)
    result = diversify(["h", "x", "y", "z"], vectors)
    assert result.removed == ("h",) and result.survivors == ("x", "y", "z")


def test_diversity_ties_go_to_smaller_dissimilarity_then_larger_id() -> None:
    # a pair: both have one edge, the same δ: the larger id goes
    pair = np.array([[1.0, 0.0], at_cosine(0.9)])
    assert diversify(["p", "q"], pair).removed == ("q",)
    assert diversify([2, 1], pair).removed == (2,)
    # a chain a - b - c with b's edges; then a path x - m - y where m has 2 edges: m goes
    # a triangle where all have 2 edges: the one with the smallest total δ goes first
    tri = np.array([[1.0, 0.0], at_cosine(0.95), at_cosine(0.85)])
    # δ(a,b)=0.05, δ(a,c)=0.15, δ(b,c)=1-cos(b,c); cos(b,c)=0.95*0.85+sqrt(1-.9025)*sqrt(1-.7225)
    delta = dissimilarity_matrix(tri)
    totals = {name: delta[i].sum() for i, name in enumerate("abc")}
    result = diversify(["a", "b", "c"], tri)
    assert result.removed[0] == min(totals, key=lambda k: totals[k])
    assert len(result.survivors) == 1


def test_diversity_boundary_is_strict() -> None:
    # δ exactly 0.30 is no edge; 0.2999 is one
    assert diversify(["a", "b"], np.array([[1.0, 0.0], at_cosine(0.7)])).removed == ()
    assert diversify(["a", "b"], np.array([[1.0, 0.0], at_cosine(0.7001)])).removed == ("b",)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 14), st.integers(2, 5)),
              elements=st.floats(-1, 1, allow_nan=False).filter(lambda x: abs(x) > 1e-3)),
       st.floats(0.05, 0.9))
def test_survivors_are_pairwise_far_apart(vectors: np.ndarray, tau_d: float) -> None:
    ids = [f"i{k:02d}" for k in range(len(vectors))]
    result = diversify(ids, vectors, tau_d=tau_d)
    delta = dissimilarity_matrix(vectors)
    alive = [ids.index(s) for s in result.survivors]
    assert all(delta[i, j] >= tau_d for i in alive for j in alive if i != j)
    assert sorted(result.survivors + result.removed) == ids  # every item accounted for once
    # no survivor could be added back: each removed item is within τd of a survivor or of a later removal
    assert diversify(ids, vectors, tau_d=tau_d) == result  # deterministic


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 14), st.integers(2, 5)),
              elements=st.floats(-1, 1, allow_nan=False).filter(lambda x: abs(x) > 1e-3)),
       st.floats(0.5, 0.99))
def test_kept_items_are_pairwise_below_tau(vectors: np.ndarray, tau: float) -> None:
    ids = list(range(len(vectors)))
    result = dedup(ids, vectors, tau=tau)
    sims = cosine_matrix(vectors)
    assert all(sims[i, j] < tau for i in result.kept for j in result.kept if i != j)
    for d in result.duplicates:
        assert d.duplicate_of in result.kept and sims[d.id, d.duplicate_of] >= tau
        assert list(ids).index(d.duplicate_of) < list(ids).index(d.id)
