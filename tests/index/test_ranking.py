"""Our scorer against FTS5's own bm25(): same lists, same order, same scores.

Every test runs four times: with the C kernel, when built, choosing per query (``auto``, the
default), always on its pruning path (``maxscore``) and always on its every-posting path
(``blocks``), and with numpy alone.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from drsearch.contract import DrsearchError
from drsearch.index import BlockList, Engine, build
from drsearch.index.native import NATIVE_AVAILABLE
from drsearch.index.scoring import ONE_LIST_POSTINGS, SINGLE_TERM_POSTINGS

from ..helpers import best_chunk_per_doc, blocklist_of, cranfield_queries, fts5_oracle, sample_docs
from .schema_v1 import write_v1

QUERIES = cranfield_queries()
NEEDS_C = pytest.mark.skipif(not NATIVE_AVAILABLE, reason="drsearch.index._kernels not built")
SCORERS = [pytest.param(m, marks=NEEDS_C) for m in ("auto", "maxscore", "blocks")] + ["numpy"]
KINDS = {"auto": "c-auto", "maxscore": "c-maxscore", "blocks": "c-blocks", "numpy": "numpy"}
PRUNING = {"auto": "auto", "maxscore": "always", "blocks": "never", "numpy": "auto"}


@pytest.fixture(scope="module", params=SCORERS)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def open_engine(path: Path, mode: str, blocklist: BlockList | None = None) -> Engine:
    e = Engine.open(path, blocklist, native=mode != "numpy", pruning=PRUNING[mode])  # type: ignore[arg-type]
    # build() gives documents consecutive rowids: the C kernel applies.
    assert e.stats()["scorer"] == KINDS[mode]
    return e


@pytest.fixture(scope="module")
def engine(cran_small_chunks: Path, mode: str) -> Engine:
    return open_engine(cran_small_chunks, mode)


@pytest.mark.parametrize("k", [10, 100])
def test_identical_to_fts5_bm25_on_all_cranfield_queries(engine: Engine, k: int) -> None:
    mismatches = []
    for q in QUERIES:
        ours = engine.rank(q, k)
        oracle = best_chunk_per_doc(engine, fts5_oracle(engine, q), k)
        if ours != oracle:  # compares chunk rowids and bit-identical float scores, in order
            mismatches.append(q)
    assert not mismatches, f"{len(mismatches)}/{len(QUERIES)} differ, e.g. {mismatches[:2]}"


def test_the_shared_oracle_is_fts5s_ranking_of_the_file_as_it_is_now(tmp_path: Path) -> None:
    """fts5_oracle (asked once per file and query) gives FTS5's ranking bit for bit, and asks
    again once the file at the same path is rebuilt from other documents."""
    path, query = tmp_path / "x.sqlite3", "video game streaming subscription"
    docs = sample_docs()
    build(docs, path)
    with Engine.open(path) as e:
        first = e.fts5_rank(query, 100_000)
        assert fts5_oracle(e, query) == first == fts5_oracle(e, query) and len(first) > 10
        assert all(type(r) is int and type(s) is float for r, s in fts5_oracle(e, query))
    build(docs[::2], path, overwrite=True)
    with Engine.open(path) as e:
        second = e.fts5_rank(query, 100_000)
        assert second != first and fts5_oracle(e, query) == second


def test_queries_with_common_terms_are_still_exact(engine: Engine) -> None:
    # 'the', 'of', 'a' are in more than half of the chunks: IDF clamped to 1e-6. Ties galore.
    for q in ["the of a", "the flow", "a theory of the boundary layer", "of", "is the and of"]:
        oracle = best_chunk_per_doc(engine, fts5_oracle(engine, q), 20)
        assert engine.rank(q, 20) == oracle, q


def test_scores_descend_and_ties_break_by_rowid(engine: Engine) -> None:
    for q in QUERIES[:50]:
        ranked = engine.rank(q, 100)
        for (c1, s1), (c2, s2) in pairwise(ranked):
            assert s1 > s2 or (s1 == s2 and c1 < c2)


def test_best_chunk_per_document(engine: Engine) -> None:
    result = engine.search("boundary layer flow over a flat plate", k=100)
    docids = [h.docid for h in result.hits]
    assert len(docids) == len(set(docids)) == 100
    oracle = engine.fts5_rank("boundary layer flow over a flat plate", 100_000)
    best: dict[int, float] = {}
    for chunk, score in oracle:
        best.setdefault(int(engine._chunk_doc[chunk]), score)
    assert [h.score for h in result.hits] == sorted(best.values(), reverse=True)[:100]


def test_blocked_hits_are_replaced_not_dropped(cran_small_chunks: Path, mode: str) -> None:
    q = QUERIES[0]
    with open_engine(cran_small_chunks, mode) as plain:
        top = plain.search(q, k=10).hits
        more = plain.search(q, k=13).hits
    blocked = [top[0].docid, top[3].docid, top[7].docid]
    with open_engine(cran_small_chunks, mode, blocklist_of(*blocked)) as e:
        hits = e.search(q, k=10).hits
        assert len(hits) == 10
        assert not {h.docid for h in hits} & set(blocked)
        assert [h.docid for h in hits] == [h.docid for h in more if h.docid not in blocked]
        assert [h.rank for h in hits] == list(range(1, 11))


def test_blocklist_holds_for_every_query(cran_small_chunks: Path, mode: str) -> None:
    with open_engine(cran_small_chunks, mode) as plain:
        blocked = {plain.search(q, k=1).hits[0].docid for q in QUERIES[:40] if plain.search(q, k=1).hits}
    with open_engine(cran_small_chunks, mode, blocklist_of(*blocked)) as e:
        for q in QUERIES:
            assert not {h.docid for h in e.search(q, k=20, with_text=False).hits} & blocked


def test_a_version_1_file_ranks_exactly_as_version_2(cran_small_chunks_stored: Path, mode: str,
                                                     tmp_path: Path) -> None:
    """A file built before block maxima (schema version 1) opens and ranks with the per-term
    bounds only: the same ordered chunks and bitwise scores as the version-2 file, which the
    tests above check against FTS5."""
    cran_small_chunks = cran_small_chunks_stored
    v1 = write_v1(cran_small_chunks, tmp_path / "v1.sqlite3")
    assert v1.stat().st_size < cran_small_chunks.stat().st_size
    with open_engine(cran_small_chunks, mode) as e2, open_engine(v1, mode) as e1:
        assert (e1.stats()["schema_version"], e2.stats()["schema_version"]) == (1, 2)
        assert (e1.block_postings, e2.block_postings) == (None, 64)
        assert e1.stats()["content_identity"] == e2.stats()["content_identity"]
        for i, q in enumerate([*QUERIES, "the of a", "of", "a theory of the boundary layer"]):
            k = (1, 10, 100)[i % 3]
            assert e1.rank(q, k) == e2.rank(q, k), q


def one_term_queries(e: Engine) -> list[str]:
    """Indexed sparse terms of every df around the one-term fast path's limit: 1, fewer
    postings than k=10, more, at the limit, just past it, and two blocks' worth."""
    limit = SINGLE_TERM_POSTINGS
    out = []
    for lo, hi in [(1, 1), (2, 9), (11, limit - 1), (limit, limit), (limit + 1, limit + 8), (65, 200)]:
        out += [t for (t,) in e._db().execute(
            "SELECT term FROM terms WHERE dense = 0 AND df BETWEEN ? AND ? AND term GLOB '[a-z]*' "
            "ORDER BY df DESC, term LIMIT 3", (lo, hi))]
    assert len(out) == 18
    return out


def docid_of(e: Engine, chunk: int) -> str:
    return e._doc_table().get([int(e._chunk_doc[chunk])])[0][0]


@pytest.mark.parametrize("blocked", [False, True])
def test_one_term_queries_rank_as_fts5_with_and_without_the_fast_path(cran_small_chunks: Path, mode: str,
                                                                      blocked: bool) -> None:
    with open_engine(cran_small_chunks, mode) as plain:
        terms = one_term_queries(plain)
        # block the best and the third document of each term: hits move up, none is lost
        hidden = {h.docid for t in terms for h in plain.search(t, 3, with_text=False).hits[::2]}
        oracles = {(t, k): best_chunk_per_doc(plain, plain.fts5_rank(t, 100_000), 1000)
                   for t in terms for k in (1, 10, 100)}
    with open_engine(cran_small_chunks, mode, blocklist_of(*hidden) if blocked else None) as e:
        calls = []
        fast = e.scorer._rank_one
        e.scorer._rank_one = lambda *a: calls.append(a[0].df) or fast(*a)  # type: ignore[method-assign]
        # The fast path's default limit: ONE_LIST_POSTINGS in C (every term here), else
        # SINGLE_TERM_POSTINGS; then that limit on every path, then none.
        default = e.scorer.single_term_postings
        assert default == (SINGLE_TERM_POSTINGS if mode == "numpy" else ONE_LIST_POSTINGS)
        for limit in (default, SINGLE_TERM_POSTINGS, 0):
            e.scorer.single_term_postings = limit
            for (t, k), oracle in oracles.items():
                visible = [(c, s) for c, s in oracle
                           if not blocked or docid_of(e, c) not in hidden][:k]
                assert e.rank(t, k) == visible, (t, k, limit)
        short = [df for df in calls if df <= SINGLE_TERM_POSTINGS]
        assert max(short) == SINGLE_TERM_POSTINGS  # the fast path ran, up to its limit
        # 12 of the 18 terms are short enough for SINGLE_TERM_POSTINGS, all 18 for the C
        # path's default, each at 3 k's; a term that only blocked documents hold is looked up
        # as an unknown word (hidden_terms: no postings, no ranking call)
        ranked = [t not in e._hidden_terms for t in terms]
        short, every = sum(ranked[:12]), sum(ranked)
        assert not blocked or every < 18  # the blocklist hides some of these terms entirely
        assert len(calls) == 3 * (short + (every if default == ONE_LIST_POSTINGS else short))


@NEEDS_C
def test_native_and_numpy_paths_are_bit_identical(cran_small_chunks: Path) -> None:
    with Engine.open(cran_small_chunks) as plain:
        blocked = {plain.search(q, k=1).hits[0].docid for q in QUERIES[:20] if plain.search(q, k=1).hits}
    queries = [*QUERIES, "the of a", "the flow", "of", "is the and of", "a theory of the boundary layer"]
    for bl in (None, blocklist_of(*blocked)):
        engines = [open_engine(cran_small_chunks, m, bl) for m in ("maxscore", "blocks", "numpy")]
        for i, q in enumerate(queries):
            k = 1 + (i * 7) % 100
            pruned, full, numpy_ = (e.rank(q, k) for e in engines)
            assert pruned == full == numpy_, q
        for e in engines:
            assert np.count_nonzero(e._scratch().acc) == 0
            e.close()


@NEEDS_C
def test_rank_blocks_best_chunk_per_document_ties_and_candidates() -> None:
    from drsearch.index import _kernels

    # Documents 1 (chunks 1-3), 2 (4-6), 3 (7-9); one term over chunks 1, 2, 3, 5, 7.
    chunk_doc = np.array([0, 1, 1, 1, 2, 2, 2, 3, 3, 3], dtype=np.int32)
    ids, imps = np.array([1, 2, 3, 5, 7], dtype=np.uint32), np.array([1.0, 3.0, 3.0, 2.5, 0.2])
    buf, out_c, out_s = np.zeros(64), np.empty(10, dtype=np.int64), np.empty(10)
    blocked = np.zeros(10, dtype=bool)

    def run(k: int, margin: float, bl: np.ndarray | None = None) -> tuple[int, int, float]:
        return _kernels.rank_blocks([ids], [imps], 9, bl, chunk_doc, k, margin, buf, out_c, out_s, 10.0)

    assert run(2, -1.0) == (2, 2, 2.5)
    assert out_c[:2].tolist() == [2, 5] and out_s[:2].tolist() == [3.0, 2.5]  # tie: lower rowid
    assert not buf.any()  # zeroed
    assert run(5, -1.0) == (3, 3, 0.0) and out_c[:3].tolist() == [2, 5, 7]  # fewer than k docs
    n, n_full, cut = run(2, 1.6)  # candidates: every chunk >= 2.5 - 1.6
    assert (n_full, cut) == (2, 2.5) and out_c[:n].tolist() == [1, 2, 3, 5]
    blocked[2] = blocked[3] = True
    assert run(2, -1.0, blocked) == (2, 2, 1.0) and out_c[:2].tolist() == [5, 1]
    with pytest.raises(ValueError, match="too short"):
        _kernels.rank_blocks([ids], [imps], 9, None, chunk_doc[:5], 2, -1.0, buf, out_c, out_s, 10.0)
    with pytest.raises(ValueError, match="chunks and impacts"):
        _kernels.rank_blocks([ids], [imps[:2]], 9, None, chunk_doc, 2, -1.0, buf, out_c, out_s, 10.0)


def test_requiring_native_without_the_module_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                                               cran_small_chunks: Path) -> None:
    from drsearch.index import native

    monkeypatch.setattr(native, "_kernels", None)
    with pytest.raises(DrsearchError, match="not built"):
        Engine.open(cran_small_chunks, native=True)
    with Engine.open(cran_small_chunks) as e:  # the default falls back to numpy
        assert e.scorer.kind == "numpy"
        assert e.rank(QUERIES[0], 5)


@NEEDS_C
@pytest.mark.parametrize("c_mode", ["maxscore", "blocks"])
@pytest.mark.parametrize("block_rows", [64, 200, 1000])
def test_block_by_block_ranking_matches_numpy_across_many_blocks(cran_small_chunks: Path,
                                                                  block_rows: int, c_mode: str) -> None:
    # The default block (32,768 chunks) spans this whole test index: shrink it so documents
    # and posting lists cross many block boundaries.
    with Engine.open(cran_small_chunks) as plain:
        blocked = {plain.search(q, k=1).hits[0].docid for q in QUERIES[:20] if plain.search(q, k=1).hits}
    queries = [*QUERIES, "the of a", "the flow", "is the and of", "a theory of the boundary layer"]
    for bl in (None, blocklist_of(*blocked)):
        with open_engine(cran_small_chunks, c_mode, bl) as c, \
                open_engine(cran_small_chunks, "numpy", bl) as py:
            assert c.scorer.n_rows > 5 * block_rows
            c._scratch().block = np.zeros(block_rows)
            for i, q in enumerate(queries):
                k = 1 + (i * 13) % 100
                assert c.rank(q, k) == py.rank(q, k), (q, k)
            assert not c._scratch().block.any()


@NEEDS_C
def test_rank_blocks_rejects_damaged_lists_and_honours_the_time_budget() -> None:
    from drsearch.index import _kernels

    chunk_doc = np.array([0, 1, 1, 2, 2, 3, 3, 4, 4, 5] * 20, dtype=np.int32)
    chunk_doc[1:] = np.sort(chunk_doc[1:])
    n_rows = len(chunk_doc) - 1
    buf, out_c, out_s = np.zeros(64), np.empty(n_rows + 1, dtype=np.int64), np.empty(n_rows + 1)

    def run(ids: list[int], budget: float = 10.0) -> tuple[int, int, float]:
        return _kernels.rank_blocks([np.array(ids, dtype=np.uint32)], [np.ones(len(ids))], n_rows,
                                    None, chunk_doc, 3, -1.0, buf, out_c, out_s, budget)

    assert run([1, 70, 150])[0] == 3
    with pytest.raises(ValueError, match="ascending"):
        run([150, 3])  # across blocks: would write before the block
    with pytest.raises(ValueError, match="beyond"):
        run([1, n_rows + 1])
    assert not buf.any()
    assert run(list(range(1, n_rows + 1)), budget=1e-12)[0] == -1  # ran out of time
    assert not buf.any()


@NEEDS_C
def test_rank_maxscore_skips_what_cannot_reach_the_top_and_ranks_as_rank_blocks() -> None:
    from drsearch.index import _kernels

    # 10,000 one-chunk documents. A light term in every chunk, then a heavy term in two: once
    # the first block has put chunk 30 (light + heavy) in the heap, the light term's bound
    # cannot lift any other chunk past it, so its other 9,900-odd postings are never read.
    n_rows = 10_000
    chunk_doc = np.arange(n_rows + 1, dtype=np.int32)
    rng = np.random.default_rng(7)
    light_ids = np.arange(1, n_rows + 1, dtype=np.uint32)
    light = rng.choice([0.125, 0.25, 0.375, 0.5], size=n_rows)
    heavy_ids, heavy = np.array([30, 5000], dtype=np.uint32), np.array([10.0, 10.0])
    lists = ([light_ids, heavy_ids], [light, heavy])
    bounds = np.array([0.5, 10.0])
    out_c, out_s = np.empty(n_rows + 1, dtype=np.int64), np.empty(n_rows + 1)
    counts = np.zeros(2, dtype=np.int64)
    for k in (1, 2, 100):
        buf = np.zeros(64)
        n, n_full, cut = _kernels.rank_maxscore(*lists, bounds, n_rows, None, chunk_doc, k, -1.0, buf,
                                                out_c, out_s, 10.0, counts)
        pruned = list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True))
        assert not buf.any()
        n2, n_full2, cut2 = _kernels.rank_blocks(*lists, n_rows, None, chunk_doc, k, -1.0, buf, out_c,
                                                 out_s, 10.0)
        assert (n, n_full, cut) == (n2, n_full2, cut2)
        assert pruned == list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True))
        assert pruned[0] == (30, light[29] + 10.0) or pruned[0] == (5000, light[4999] + 10.0)
        if k == 1:  # the first block, then chunk 5000 alone
            assert counts.tolist() == [64 + 2, 1]
        else:  # k = 100: the light term stays essential, every posting is read
            assert counts[0] >= 64 + 2


@NEEDS_C
@pytest.mark.parametrize("bp", [1, 7, 64])
def test_block_maxima_skip_windows_that_cannot_reach_the_top(bp: int) -> None:
    from drsearch.index import _kernels

    # 20,000 one-chunk documents, two terms in every chunk, light everywhere except chunks
    # 30..39 (both heavy). Their per-term bounds (5.0 each) never let MaxScore drop either
    # list, so without block maxima every posting is read. With them, once the heavy chunks
    # hold the top k, every later window's block maxima add up to less than the floor: it is
    # skipped unread, and the results are rank_blocks', bit for bit.
    n_rows = 20_000
    chunk_doc = np.arange(n_rows + 1, dtype=np.int32)
    rng = np.random.default_rng(11)
    ids = np.arange(1, n_rows + 1, dtype=np.uint32)
    imps = [rng.choice([0.0625, 0.125, 0.1875], size=n_rows) for _ in range(2)]
    for im in imps:
        im[29:39] = rng.choice([4.5, 5.0], size=10)
    bmax = [np.maximum.reduceat(im, np.arange(0, n_rows, bp)) for im in imps]
    bounds = np.array([5.0, 5.0])
    out_c, out_s = np.empty(n_rows + 1, dtype=np.int64), np.empty(n_rows + 1)
    buf = np.zeros(1024)
    for k in (1, 5, 10):
        for margin in (-1.0, 1e-3):
            counts = np.zeros(3, dtype=np.int64)
            args = ([ids, ids], imps, bounds, n_rows, None, chunk_doc, k, margin, buf, out_c, out_s, 10.0)
            n, n_full, cut = _kernels.rank_maxscore(*args, counts, bmax, bp)
            pruned = list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True))
            assert not buf.any()
            assert counts[0] <= 2 * 1024 + 4 * bp and counts[2] > 0  # the first window, then skips
            plain = np.zeros(3, dtype=np.int64)
            assert _kernels.rank_maxscore(*args, plain) == (n, n_full, cut)  # no block maxima
            assert pruned == list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True))
            assert plain[0] == 2 * n_rows and plain[2] == 0  # every posting read
            assert _kernels.rank_blocks([ids, ids], imps, n_rows, None, chunk_doc, k, margin, buf, out_c,
                                        out_s, 10.0) == (n, n_full, cut)
            assert pruned == list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True))
            assert n_full == k and all(29 < c < 40 for c, _ in pruned)


@NEEDS_C
def test_a_single_rare_term_reads_its_postings_only() -> None:
    from drsearch.index import _kernels

    # Eleven postings spread over a million chunks: eleven postings accumulated, no window
    # that holds none of them, whatever the corpus size.
    n_rows = 1_000_000
    chunk_doc = np.arange(n_rows + 1, dtype=np.int32)
    ids = np.linspace(1, n_rows, 11).astype(np.uint32)
    imps = np.arange(1.0, 12.0)
    out_c, out_s = np.empty(n_rows + 1, dtype=np.int64), np.empty(n_rows + 1)
    counts = np.zeros(3, dtype=np.int64)
    n, n_full, _ = _kernels.rank_maxscore([ids], [imps], np.array([11.0]), n_rows, None, chunk_doc, 10,
                                          -1.0, np.zeros(1 << 15), out_c, out_s, 10.0, counts,
                                          [np.empty(0)], 64)
    assert (n, n_full) == (10, 10) and out_c[:n].tolist() == ids[1:][::-1].tolist()
    assert counts.tolist() == [11, 0, 0]


@NEEDS_C
def test_rank_maxscore_rejects_damaged_input_and_honours_the_time_budget() -> None:
    from drsearch.index import _kernels

    chunk_doc = np.sort(np.array([0, 1, 1, 2, 2, 3, 3, 4, 4, 5] * 20, dtype=np.int32))
    n_rows = len(chunk_doc) - 1
    buf, out_c, out_s = np.zeros(64), np.empty(n_rows + 1, dtype=np.int64), np.empty(n_rows + 1)

    def run(ids: list[int], budget: float = 10.0, bounds: list[float] | None = None) -> tuple[int, int, float]:
        return _kernels.rank_maxscore([np.array(ids, dtype=np.uint32)], [np.ones(len(ids))],
                                      np.array([1.0] if bounds is None else bounds), n_rows, None,
                                      chunk_doc, 3, -1.0, buf, out_c, out_s, budget)

    assert run([1, 70, 150])[0] == 3
    with pytest.raises(ValueError, match="ascending"):
        run([150, 3])  # across blocks: would write before the block
    with pytest.raises(ValueError, match="beyond"):
        run([1, n_rows + 1])
    with pytest.raises(ValueError, match="beyond"):
        run([1, n_rows + 1, 5])  # out of order, and beyond the last chunk
    with pytest.raises(ValueError, match="one bound per term"):
        run([1, 2], bounds=[1.0, 1.0])
    with pytest.raises(ValueError, match="negative or NaN"):
        run([1, 2], bounds=[float("nan")])
    one = ([np.array([1, 70, 150], dtype=np.uint32)], [np.ones(3)], np.array([1.0]), n_rows, None,
           chunk_doc, 3, -1.0, buf, out_c, out_s, 10.0, None)
    with pytest.raises(ValueError, match="one maximum per block_postings postings"):
        _kernels.rank_maxscore(*one, [np.ones(1)], 2)  # 3 postings in blocks of 2: 2 maxima
    with pytest.raises(ValueError, match="block_postings must be >= 1"):
        _kernels.rank_maxscore(*one, [np.ones(2)], 0)
    with pytest.raises(ValueError, match="one impacts"):
        _kernels.rank_maxscore(*one, [], 2)
    assert _kernels.rank_maxscore(*one, [np.ones(2)], 2)[0] == 3
    assert not buf.any()
    assert run(list(range(1, n_rows + 1)), budget=1e-12)[0] == -1  # ran out of time
    assert not buf.any()


@NEEDS_C
def test_auto_pruning_picks_maxscore_for_few_postings_and_every_posting_for_many(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from drsearch.index import native, scoring
    from drsearch.index.scoring import Scorer, SparseTerm

    calls: list[str] = []
    for name in ("rank_maxscore", "rank_blocks"):
        fn = getattr(native._kernels, name)
        monkeypatch.setattr(native._kernels, name,
                            lambda *a, _fn=fn, _n=name: (calls.append(_n), _fn(*a))[1])
    n_rows = 1000
    rare = SparseTerm("r", 3, np.array([5, 50, 500], dtype=np.uint32), np.array([1.0, 2.0, 3.0]), 3.0)
    common = SparseTerm("c", 400, np.arange(1, 401, dtype=np.uint32), np.full(400, 0.5), 0.5,
                        np.full(7, 0.5))
    top2 = [(500, 3.0), (50, 2.5)]
    # A version-1 file (no block maxima): pruning for few postings only.
    scorer = Scorer(np.arange(n_rows + 1, dtype=np.int32), np.full(n_rows + 1, 10, dtype=np.int32),
                    block_postings=None)
    assert scorer.kind == "c-auto"
    scratch = scorer.scratch()
    assert scorer.rank([rare], 2, None, scratch, 1e18) == [(500, 3.0), (50, 2.0)]
    assert calls == []  # one short list: the one-term fast path, no kernel
    scorer.single_term_postings = 0
    assert scorer.rank([rare], 2, None, scratch, 1e18) == [(500, 3.0), (50, 2.0)]  # 3 postings
    assert scorer.rank([rare, common], 2, None, scratch, 1e18) == top2  # 403
    assert calls == ["rank_maxscore", "rank_blocks"]
    # With block maxima, a small corpus prunes as before; one of PRUNE_ALL_ROWS chunks or more
    # also prunes every query of k <= PRUNE_ALL_K.
    calls.clear()
    scorer = Scorer(np.arange(n_rows + 1, dtype=np.int32), np.full(n_rows + 1, 10, dtype=np.int32))
    assert scorer.rank([rare, common], 2, None, scorer.scratch(), 1e18) == top2
    assert calls == ["rank_blocks"]
    calls.clear()
    big = scoring.PRUNE_ALL_ROWS
    many = SparseTerm("m", big // 2, np.arange(1, big // 2 + 1, dtype=np.uint32), np.full(big // 2, 0.5),
                      0.5, np.full(big // 2 // 64, 0.5))
    scorer = Scorer(np.arange(big + 1, dtype=np.int32), np.full(big + 1, 10, dtype=np.int32))
    scratch = scorer.scratch()
    for k in (2, 10, 11):
        assert scorer.rank([rare, many], k, None, scratch, 1e18)[:2] == [(500, 3.5), (50, 2.5)]
    assert calls == ["rank_maxscore", "rank_maxscore", "rank_blocks"]
    with pytest.raises(ValueError, match="pruning must be one of"):
        Scorer(np.arange(3, dtype=np.int32), np.ones(3, dtype=np.int32), pruning="sometimes")  # type: ignore[arg-type]


def test_a_kernel_built_from_an_older_source_is_refused_not_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout updated without rebuilding its C kernel keeps the old module: its
    rank_maxscore takes no block maxima, so calling it would fail on every query. It is
    refused at import (numpy ranks instead, same results), and native=True says why."""
    from types import SimpleNamespace

    from drsearch.index import native, scoring

    if NATIVE_AVAILABLE:
        assert native.kernel_problem(native._kernels) is None
    stale = native.kernel_problem(SimpleNamespace())  # built before the ABI constant
    assert stale is not None and stale.startswith("drsearch.index._kernels is stale (interface 1, ")
    assert "rebuild it" in stale
    monkeypatch.setattr(native, "_kernels", None)
    monkeypatch.setattr(native, "_PROBLEM", stale)
    rows = np.arange(3, dtype=np.int32)
    with pytest.raises(DrsearchError, match="is stale"):
        scoring.Scorer(rows, np.ones(3, dtype=np.int32), native=True)
    assert scoring.Scorer(rows, np.ones(3, dtype=np.int32)).kind == "numpy"


@NEEDS_C
@pytest.mark.parametrize("n_lists", [1, 4])
def test_pruning_windows_of_every_cap_rank_as_the_sequential_pass(n_lists: int) -> None:
    from drsearch.index import _kernels
    from drsearch.index.scoring import BLOCK_ROWS

    # 200,000 chunks (documents of 1-3 chunks), lists of 3-30% of them with skewed impacts:
    # rank_maxscore's windows reach their caps (4,096 rowids for one list, 16,384 for several,
    # both within the engine's buffer); every answer equals rank_blocks', bit for bit.
    rng = np.random.default_rng(20261202)
    n_rows = 200_000
    chunk_doc = np.concatenate([[0], np.repeat(np.arange(1, n_rows + 1), rng.integers(1, 4, n_rows))[:n_rows]])
    chunk_doc = chunk_doc.astype(np.int32)
    ids, imps, bmax = [], [], []
    for _ in range(n_lists):
        rows = np.flatnonzero(rng.random(n_rows) < rng.uniform(0.03, 0.3)) + 1
        w = rng.pareto(2.0, len(rows)) + 0.1
        ids.append(rows.astype(np.uint32))
        imps.append(w)
        bmax.append(np.maximum.reduceat(w, np.arange(0, len(w), 64)))
    bounds = np.array([float(w.max()) for w in imps])
    out_c, out_s = np.empty(n_rows + 1, dtype=np.int64), np.empty(n_rows + 1)
    for k in (1, 10, 100):
        n = _kernels.rank_maxscore(ids, imps, bounds, n_rows, None, chunk_doc, k, -1.0, np.zeros(BLOCK_ROWS),
                                   out_c, out_s, 10.0, None, bmax, 64)
        pruned = list(zip(out_c[: n[0]].tolist(), out_s[: n[0]].tolist(), strict=True))
        assert n[0] == k
        assert _kernels.rank_blocks(ids, imps, n_rows, None, chunk_doc, k, -1.0, np.zeros(BLOCK_ROWS), out_c,
                                    out_s, 10.0) == n
        assert pruned == list(zip(out_c[: n[0]].tolist(), out_s[: n[0]].tolist(), strict=True))
