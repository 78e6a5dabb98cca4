"""Property tests: the traversal over 8-bit quantised impacts (``_kernels.rank_quant`` and its
numpy twin ``reference.rank_quant``) ranks exactly as the exact paths, bit for bit.

The random corpora are test_scoring_properties' (many exact score ties, blocked chunks,
clamped (dense) terms turned into lists of their non-zero rows, sparse terms in half the
chunks or more, terms whose weights differ by orders of magnitude, a single rare term or up
to 20 terms, k from 1 to 100), some of them spread over up to ~30,000 chunks, and ranked with
windows of 64 to 16,384 rowids (so that lists and documents cross window boundaries). The
quantisation unit is the lists' largest impact over 255 (the finest), or that of a 2x to
1000x larger impact (coarse quants: most postings round up to 1 and the quantised sums tie
everywhere). The exact answer is the numpy path's (itself checked against FTS5's bm25() in
test_ranking.py) and rank_blocks'; test_quant_fts5 checks the traversal against FTS5 directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsearch.index import Engine, native, reference
from drsearch.index.engine import EngineOptions
from drsearch.index.scoring import Scorer, SparseTerm
from drsearch.index.terms import quant_unit, quantize

from ..helpers import best_chunk_per_doc, blocklist_of, cranfield_queries, fts5_oracle
from .test_scoring_properties import corpora, make_terms

QUERIES = cranfield_queries()

pytestmark = pytest.mark.skipif(not native.NATIVE_AVAILABLE, reason="drsearch.index._kernels not built")


def spread(c: dict[str, Any], times: int, seed: int) -> dict[str, Any]:
    """The corpus ``times`` over: each copy's chunks after the previous copy's, each sparse
    list's postings copied with it (the copies scaled by an exact power of two or not, so
    that some tie across copies and some do not): windows then cut lists and documents."""
    if times == 1:
        return c
    rng = np.random.default_rng(seed)
    cd = c["chunk_doc"]
    n_rows, n_docs = len(cd) - 1, int(cd[-1])
    chunk_doc = np.concatenate([[0], *[cd[1:] + r * n_docs for r in range(times)]]).astype(np.int32)
    chunk_len = np.concatenate([[0], *[c["chunk_len"][1:]] * times]).astype(np.int32)
    terms: list[tuple[str, Any]] = []
    for kind, data in c["terms"]:
        if kind == "dense":
            terms.append((kind, np.concatenate([[0], *[data[1:]] * times]).astype(np.uint16)))
            continue
        rows, imps, bound, _ = data
        scales = [1.0] + [float(rng.choice([1.0, 0.5, 0.75])) for _ in range(times - 1)]
        all_rows = np.concatenate([rows.astype(np.int64) + r * n_rows for r in range(times)])
        all_imps = np.concatenate([imps * s for s in scales])
        terms.append((kind, (all_rows.astype(np.uint32), all_imps, bound, np.empty(0))))
    blocked = None if c["blocked"] is None else np.concatenate([[False], *[c["blocked"][1:]] * times])
    return {**c, "chunk_doc": chunk_doc, "chunk_len": chunk_len, "terms": terms, "blocked": blocked}


@st.composite
def quant_cases(draw: Any) -> dict[str, Any]:
    c = draw(corpora())
    c = spread(c, draw(st.sampled_from([1, 1, 4, 30, 80])), draw(st.integers(0, 2**16)))
    c["window"] = draw(st.sampled_from([64, 128, 1024, 4096, 16384]))
    c["coarse"] = draw(st.sampled_from([1.0, 1.0, 2.0, 1000.0]))
    c["k"] = draw(st.sampled_from([c["k"], 1, 100]))
    return c


def quant_lists(scorer: Scorer, c: dict[str, Any]) -> tuple[list[tuple[Any, Any, Any]], float]:
    """The corpus' terms as (rowids, quants, impacts) in phrase order (a clamped term as its
    non-zero rows), and the unit they are quantised with."""
    lists = [scorer._as_list(t) for t in make_terms(c["terms"], False)]
    top = max((float(t.impacts.max()) for t in lists if len(t.impacts)), default=1.0)
    unit = quant_unit(top * c["coarse"])
    return [(t.chunks, quantize(t.impacts, unit), t.impacts) for t in lists], unit


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quant_cases())
def test_quantised_traversal_ranks_exactly(c: dict[str, Any]) -> None:
    exact = Scorer(c["chunk_doc"], c["chunk_len"], native=False, pruning="never")
    exact.single_term_postings = 0
    want = exact.rank(make_terms(c["terms"]), c["k"], c["blocked"], exact.scratch(), 1e18)
    blocks = Scorer(c["chunk_doc"], c["chunk_len"], native=True, pruning="never")
    blocks.single_term_postings = 0
    assert blocks.rank(make_terms(c["terms"]), c["k"], c["blocked"], blocks.scratch(), 1e18) == want
    lists, unit = quant_lists(exact, c)
    n_rows = len(c["chunk_doc"]) - 1
    got_c = native.rank_quant(lists, unit, n_rows, c["blocked"], c["chunk_doc"], c["k"], c["window"])
    got_ref = reference.rank_quant(lists, unit, n_rows, c["blocked"], c["chunk_doc"], c["k"])
    assert got_c == want
    assert got_ref == want


def test_quantize_bounds_every_impact_from_above() -> None:
    rng = np.random.default_rng(7)
    imps = np.concatenate([rng.random(10_000) * 17.3, [17.3, 17.3 * (1 - 1e-16), 1e-6, 5e-7]])
    for top in (17.3, 17.3 * 3, 1e4):
        unit = quant_unit(top)
        q = quantize(imps, unit)
        assert q.dtype == np.uint8
        assert np.all(q.astype(np.float64) * unit >= imps)
        assert np.all(q >= 1)
        assert np.all((q.astype(np.float64) - 1.0) * unit < imps)  # the smallest such bound
    assert int(quantize(np.array([17.3]), quant_unit(17.3))[0]) == 255
    with pytest.raises(ValueError, match="outside"):
        quantize(np.array([18.0]), quant_unit(17.3))


def test_a_bound_below_the_impact_is_what_quantize_prevents() -> None:
    """The traversal trusts quants * unit >= impact: with quants rounded down instead, a
    document of the true top k is pruned (so the property test above can fail)."""
    chunk_doc = np.arange(0, 3001, dtype=np.int32)
    n = 3000
    heavy = np.array([2000], dtype=np.uint32)  # one chunk late in the corpus, of a rare term
    light = np.arange(1, n + 1, dtype=np.uint32)  # a common term, every chunk
    light_imp = np.full(n, 1.0)
    heavy_imp = np.array([1.004])
    unit = quant_unit(2.0)
    good = [(light, quantize(light_imp, unit), light_imp), (heavy, quantize(heavy_imp, unit), heavy_imp)]
    want = [(2000, 2.004), (1, 1.0)]
    assert native.rank_quant(good, unit, n, None, chunk_doc, 2) == want
    assert reference.rank_quant(good, unit, n, None, chunk_doc, 2) == want
    floor_q = (np.floor(light_imp / unit) - 1).astype(np.uint8)  # one step short
    bad = [(light, floor_q, light_imp), (heavy, np.zeros(1, dtype=np.uint8), heavy_imp)]
    assert native.rank_quant(bad, unit, n, None, chunk_doc, 2) != want


def test_rank_quant_refuses_damaged_input() -> None:
    chunk_doc = np.arange(0, 11, dtype=np.int32)
    rows = np.array([3, 2], dtype=np.uint32)
    imps = np.array([1.0, 1.0])
    q = quantize(imps, quant_unit(1.0))
    with pytest.raises(ValueError, match="not ascending"):
        native.rank_quant([(rows, q, imps)], quant_unit(1.0), 10, None, chunk_doc, 3)
    beyond = np.array([3, 11], dtype=np.uint32)
    with pytest.raises(ValueError, match="not ascending"):
        native.rank_quant([(beyond, q, imps)], quant_unit(1.0), 10, None, chunk_doc, 3)
    with pytest.raises(ValueError, match="differ in length"):
        native.rank_quant([(rows[:1], q, imps)], quant_unit(1.0), 10, None, chunk_doc, 3)
    with pytest.raises(ValueError, match="inconsistent"):
        native.rank_quant([(rows[:1], q[:1], imps[:1])], quant_unit(1.0), 10, None, chunk_doc, 3, 100)
    with pytest.raises(ValueError, match="inconsistent"):
        native.rank_quant([], quant_unit(1.0), 10, None, chunk_doc, 3)


def test_sparse_term_lists_quantise_as_the_engine_would() -> None:
    t = SparseTerm("x", 3, np.array([1, 5, 9], dtype=np.uint32), np.array([0.5, 2.0, 1.25]), 2.0)
    q = quantize(t.impacts, quant_unit(t.max_impact))
    assert q.tolist() == [64, 255, 160]


@pytest.mark.parametrize("native_path", [True, False])
def test_quant_fts5_on_every_cranfield_query(cran_small_chunks: Path, native_path: bool) -> None:
    """The option's whole path (the engine's lists quantised once, traversed, rescored) gives
    FTS5's own bm25() ranking bit for bit: every Cranfield query (small chunks: many ties,
    clamped terms) at k = 1, 10 and 100, in C and in numpy, with and without a blocklist."""
    opts = EngineOptions(quantized=True)
    blocked = blocklist_of("cran-1", "cran-13", "cran-184", "cran-555")
    for bl in (None, blocked):
        with Engine.open(cran_small_chunks, bl, native=native_path, options=opts) as e:
            mismatches = []
            out = e._blocked_chunks
            for q in QUERIES:
                fts5 = [(c, s) for c, s in fts5_oracle(e, q) if out is None or not out[c]]
                for k in (1, 10, 100):
                    oracle = best_chunk_per_doc(e, fts5, k)
                    if e.rank(q, k) != oracle:
                        mismatches.append((q, k))
            assert not mismatches, f"{len(mismatches)} differ, e.g. {mismatches[:2]}"
            assert len(e._quant_lists()) > 100  # the lists were quantised and kept
            if bl is not None:
                assert out is not None and out.sum() > 4  # the blocked documents' chunks
