"""The dense scan's two paths (the C kernel's SIMD loop and its numpy twin) give the same
scores, bit for bit, and so the same rankings: random int8 rows (the extremes -128 and 127
included), tied rows, hidden rows, dimensions on both sides of the twin's float32 bound."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from drsearch.dense import best_per_document
from drsearch.index import native
from drsearch.index.dense_scan import dense_path, dense_scores

needs_kernel = pytest.mark.skipif(not native.available(), reason="the C kernel is not built")


def _case(seed: int, n: int, d: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    matrix = rng.integers(-128, 128, (n, d), dtype=np.int16).astype(np.int8)
    matrix[rng.integers(0, n, n // 10)] = matrix[0]  # ties: copies of one row...
    matrix[: min(n, 3)] = 127  # ...and the extremes
    query = rng.integers(-128, 128, d, dtype=np.int16).astype(np.int8)
    query[0] = -128
    scales = rng.uniform(1e-4, 2e-2, n)
    scales[rng.integers(0, n, n // 10)] = scales[0]
    hidden = rng.random(n) < 0.2
    hidden[0] = True
    return {"matrix": matrix, "query": query, "scales": scales, "q_scale": float(rng.uniform(1e-3, 1e-2)),
            "hidden": hidden}


def _exact(case: dict[str, Any]) -> np.ndarray[Any, Any]:
    """The definition, in int64 and float64: an independent oracle of both paths."""
    dots = case["matrix"].astype(np.int64) @ case["query"].astype(np.int64)
    out = (dots.astype(np.float64) * case["scales"]) * case["q_scale"]
    out[case["hidden"]] = -np.inf
    return out


def _run(case: dict[str, Any], **how: Any) -> np.ndarray[Any, Any]:
    out = np.full(len(case["scales"]), np.nan)
    if how.get("baseline"):
        native.dense_scores(case["matrix"], case["query"], case["scales"], case["q_scale"], case["hidden"], out,
                            baseline=True)
    else:
        dense_scores(case["matrix"], case["query"], case["scales"], case["q_scale"], case["hidden"], out, **how)
    return out


def _same_bits(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    return a.shape == b.shape and bool((a.view(np.uint64) == b.view(np.uint64)).all())


CASES = [(seed, n, d) for seed, (n, d) in enumerate(
    [(1, 1), (17, 7), (1000, 384), (4099, 31), (300, 1024), (200, 1025), (50, 4000), (20000, 384)])]


@pytest.mark.parametrize(("seed", "n", "d"), CASES)
def test_the_numpy_twin_is_the_definition(seed: int, n: int, d: int) -> None:
    case = _case(seed, n, d)
    assert _same_bits(_run(case, native=False), _exact(case))


@needs_kernel
@pytest.mark.parametrize(("seed", "n", "d"), CASES)
def test_the_kernel_gives_the_twins_bits_and_ranking(seed: int, n: int, d: int) -> None:
    case = _case(seed, n, d)
    c, py, base = _run(case, native=True), _run(case, native=False), _run(case, baseline=True)
    assert _same_bits(c, py) and _same_bits(base, py)
    chunk_doc = np.arange(n, dtype=np.int32) // 3  # three chunks a document
    for k in (1, 10, 100):
        assert best_per_document(c, chunk_doc, k) == best_per_document(py, chunk_doc, k)
    assert not any(case["hidden"][r] for r, _ in best_per_document(c, chunk_doc, n))


@needs_kernel
def test_ties_rank_by_lower_row_on_both_paths() -> None:
    case = _case(7, 600, 64)
    case["matrix"][:] = case["matrix"][1]  # every row the same vector and scale: all tied
    case["scales"][:] = case["scales"][1]
    chunk_doc = np.arange(600, dtype=np.int32)
    want = [int(r) for r in np.flatnonzero(~case["hidden"])[:10]]
    for native_path in (True, False):
        ranked = best_per_document(_run(case, native=native_path), chunk_doc, 10)
        assert [r for r, _ in ranked] == want


@needs_kernel
def test_the_kernel_path_is_named() -> None:
    assert dense_path() in ("avx2", "baseline")


@pytest.mark.parametrize("native_path", [pytest.param(True, marks=needs_kernel), False])
def test_inconsistent_shapes_are_a_value_error(native_path: bool) -> None:
    case = _case(3, 10, 8)
    with pytest.raises(ValueError, match="inconsistent"):
        dense_scores(case["matrix"], case["query"][:5], case["scales"], 1.0, None, np.empty(10),
                     native=native_path)
    with pytest.raises(ValueError, match="inconsistent"):
        dense_scores(case["matrix"], case["query"], case["scales"], 1.0, case["hidden"][:4], np.empty(10),
                     native=native_path)
