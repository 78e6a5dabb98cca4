"""A complete search's chunk texts and snippets made in the kernel call that ranks its chunks
(the ``texts`` argument of ``rank_blocks``, ``rank_maxscore`` and ``rescore``;
``Scorer.rank_texts``) against the same search with them read after the ranking
(``SnippetMaker.of_rows``, ``EngineOptions(texts_with_ranking=False)``): the same results, texts and
snippets on every path that ranks in C (lists alone, beside clamped terms, blocklists, k 1 to
100, real web pages and Cranfield), and the outcomes that are not texts: a deadline, a row that
cannot be read, a refused argument."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drsearch.contract import CorruptIndexError, QueryTimeoutError
from drsearch.index import BlockList, Engine
from drsearch.index.engine import EngineOptions
from drsearch.index.native import native_kernels
from drsearch.index.scoring import PagedTerm, Scorer, SparseTerm
from drsearch.index.snippet import SnippetMaker

from ...helpers import cranfield_queries

kernels = native_kernels()
# a complete search's texts read after the ranking, or made in its call; either way call by call
# (the ranking's call then the hits': test_search_hits.py compares those with the one call)
TEXTS_AFTER = EngineOptions(texts_with_ranking=False, search_in_one_call=False)
TEXTS_WITH = EngineOptions(search_in_one_call=False)
pytestmark = pytest.mark.skipif(kernels is None, reason="C kernel not built")

SAMPLE_QUERIES = ["video game streaming subscription", "Stadia launch price", "black friday deals",
                  "pokemon sword shield review", "the", "2019 release date", "Google Microsoft Sony",
                  "price €", "Москва", "東京", "the of a and"]
CRAN_QUERIES = [*cranfield_queries()[:40], "the of a flow", "of the", "pressure distribution"]


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many rankings made their texts, by path: lists alone, or the rescoring beside clamped
    terms in the ranking's call (what the equality tests must have covered)."""
    made = {"lists": 0, "rescored": 0}
    real_run, real_rescored = Scorer._run, Scorer._run_rescored

    def run(self: Scorer, *args: Any, **kwargs: Any) -> Any:
        got = real_run(self, *args, **kwargs)
        if len(args) < 8 or args[7] is None:  # (with `rescore`, _run_rescored counts)
            made["lists"] += got[3] is not None
        return got

    def rescored(self: Scorer, *args: Any, **kwargs: Any) -> Any:
        got = real_rescored(self, *args, **kwargs)
        made["rescored"] += got is not None and got[1] is not None
        return got

    monkeypatch.setattr(Scorer, "_run", run)
    monkeypatch.setattr(Scorer, "_run_rescored", rescored)
    return made


@pytest.mark.parametrize("which", ["sample", "cran"])
def test_texts_made_with_the_ranking_are_those_read_after_it(which: str, sample_index: Path, cran_index: Path,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, queries = (sample_index, SAMPLE_QUERIES) if which == "sample" else (cran_index, CRAN_QUERIES)
    with Engine.open(path) as e:
        docids = sorted({h.docid for q in queries[:6] for h in e.search(q, 2, with_text=False).hits})
    blocked = tmp_path / "block.txt"
    blocked.write_text("".join(f"{d}\n" for d in docids[::2]))
    made = _counting(monkeypatch)
    for blocklist in (None, BlockList.from_file(blocked)):
        with Engine.open(path, blocklist=blocklist, options=TEXTS_AFTER) as after, \
                Engine.open(path, blocklist=blocklist, options=TEXTS_WITH) as e:
            for q in queries:
                for k in (1, 10, 100):
                    want = after.search(q, k)
                    assert e.search(q, k) == want, (q, k)
                    assert all(h.chunk_text and h.snippet for h in want.hits)
    # (the sample's few pages rank no query beside clamped terms by the rescoring)
    assert made["lists"] >= 10 and made["rescored"] >= (10 if which == "cran" else 0), made


def test_the_ranked_chunks_texts_are_theirs(cran_index: Path) -> None:
    """Scorer.rank_texts directly: the texts of exactly the chunks it ranked, in order, and the
    snippets SnippetMaker makes of them."""
    with Engine.open(cran_index) as e:
        assert e._chunk_texts is not None
        for q in CRAN_QUERIES[:20]:
            parsed = e.parse(q)
            terms = e._postings(parsed, time.monotonic() + 60)
            maker = e._snippets(parsed, terms, time.monotonic() + 60)
            spec = maker.texts_args(e._chunk_texts)
            ranked, made = e.scorer.rank_texts(terms, 10, None, e._scratch(), time.monotonic() + 60, spec)
            assert made is not None and ranked == e.scorer.rank(terms, 10, None, e._scratch(), time.monotonic() + 60)
            ids = [c for c, _ in ranked]
            texts, snippets = maker.finish(made)
            assert texts == e._chunk_texts.read_texts(ids)
            assert snippets == maker.many(texts, native=False)


def test_a_deadline_passed_while_making_texts_is_a_timeout(cran_index: Path) -> None:
    with Engine.open(cran_index) as e:
        assert e._chunk_texts is not None
        q = "pressure distribution of the flow"
        parsed = e.parse(q)
        terms = e._postings(parsed, time.monotonic() + 60)
        late = SnippetMaker([("pressur", "pressure", 2.0)], deadline=1.0)  # long past
        spec = late.texts_args(e._chunk_texts)
        with pytest.raises(QueryTimeoutError):
            e.scorer.rank_texts(terms, 10, None, e._scratch(), time.monotonic() + 60, spec)
        lists = [t for t in terms if t is not None and not hasattr(t, "load")]
        with pytest.raises(QueryTimeoutError):
            e.scorer._run(lists, 10, -1.0, None, e._scratch(), time.monotonic() + 60, spec)


def _kernel_args(e: Engine, q: str) -> tuple[Any, ...]:
    """rank_blocks' arguments for query q's lists on engine e (the lists copied as arrays)."""
    terms = [t.read() if isinstance(t, PagedTerm) else t
             for t in e._postings(e.parse(q), time.monotonic() + 60) if isinstance(t, SparseTerm | PagedTerm)]
    assert terms
    s = e._scratch()
    return ([t.chunks for t in terms], [t.impacts for t in terms], e.scorer.n_rows, None,
            e.scorer._chunk_doc32, 10, -1.0, s.block, s.out_chunks, s.out_scores, 60.0, None)


def test_the_kernels_refuse_texts_they_cannot_make_and_fail_soft_on_a_row(cran_index: Path) -> None:
    assert kernels is not None
    with Engine.open(cran_index) as e:
        assert e._chunk_texts is not None
        maker = SnippetMaker([("flow", "flow", 1.0)])
        spec = maker.texts_args(e._chunk_texts)
        args = _kernel_args(e, "pressure distribution boundary layer")
        n, _, _ = kernels.rank_blocks(*args)
        got = kernels.rank_blocks(*args, spec)
        assert got[0] == n and got[3][0] == e._chunk_texts.read_texts(args[8][:n].tolist())
        bad_margin = (*args[:6], 0.5, *args[7:])
        with pytest.raises(ValueError, match="margin < 0"):
            kernels.rank_blocks(*bad_margin, spec)
        with pytest.raises(TypeError, match="texts: a tuple"):
            kernels.rank_blocks(*args, list(spec))
        with pytest.raises(ValueError, match="invalid file geometry"):
            kernels.rank_blocks(*args, (spec[0], 1000, *spec[2:]))
        with pytest.raises(ValueError, match="stems"):
            kernels.rank_blocks(*args, (*spec[:5], ["flow"], [], *spec[7:]))
        # column 1 (the chunk's document) is not TEXT: no exception from the ranking, False for
        # the texts (the caller reads them by texts_snippets, which says why)
        not_text = (*spec[:4], 1, *spec[5:])
        assert kernels.rank_blocks(*args, not_text)[3] is False
        cand = np.unique(args[8][:n]).astype(np.uint32)
        rescore = (cand, [(1, t_c, t_i) for t_c, t_i in zip(args[0], args[1], strict=True)], b"",
                   e.scorer._chunk_len32, e.scorer.k1, e.scorer.b, e.scorer._avgdl, e.scorer.k1p1,
                   1e-6, e.scorer._chunk_doc32, 10)
        ranked = kernels.rescore(*rescore)
        assert kernels.rescore(*rescore, spec)[0] == ranked
        assert kernels.rescore(*rescore, not_text) == (ranked, False)
        assert kernels.rescore(*rescore, (*spec[:8], 1.0)) == (ranked, None)  # deadline long past


@pytest.mark.parametrize("which", ["sample", "cran"])
def test_the_hits_read_with_the_ranking_change_nothing(which: str, sample_index: Path, cran_index: Path) -> None:
    """The texts argument's `hits` (make_hits' buffers, read into the cache without the GIL):
    the same result with them as without, also with buffers whose values point anywhere (read
    nowhere outside them: never a crash, never another result), and a TypeError for one that
    is not make_hits' buffers."""
    assert kernels is not None
    with Engine.open(sample_index if which == "sample" else cran_index) as e:
        assert e._chunk_texts is not None
        maker = SnippetMaker([("flow", "flow", 1.0), ("video", "video", 2.0)])
        hits = e._hit_buffers()
        cd, co, offs, fields, pieces = hits
        args = _kernel_args(e, "pressure distribution boundary layer video game streaming")
        want = kernels.rank_blocks(*args, maker.texts_args(e._chunk_texts))
        assert want[0] > 0 and want[3]
        assert kernels.rank_blocks(*args, maker.texts_args(e._chunk_texts, hits)) == want
        rng = np.random.default_rng(11)

        def wild(a: Any, dtype: Any) -> Any:
            info = np.iinfo(dtype)
            return rng.integers(info.min, info.max, len(a), dtype=dtype, endpoint=True)

        n_pc = 0 if pieces is None else len(pieces) // 8
        wild_pieces = [None] if pieces is None else [
            wild(np.zeros(n_pc), np.int64).tobytes(),
            np.array([1 << 40, 1, 1, *([len(fields) - 1] * (n_pc - 3))], dtype=np.int64).tobytes(),
            pieces[:16]]
        for bad in [(np.full_like(cd, -5), co, offs, fields, pieces), (wild(cd, np.int32), co, offs, fields, pieces),
                    (cd, wild(co, np.int32), wild(offs, np.int64), fields, pieces),
                    (cd, co, np.full_like(offs, len(fields) - 1), fields, pieces),
                    (cd[:3], co[:2], offs[:4], b"", None), (cd, co, offs, fields[:100], pieces),
                    *((cd, co, offs, fields, p) for p in wild_pieces)]:
            assert kernels.rank_blocks(*args, maker.texts_args(e._chunk_texts, bad)) == want
        for malformed in [(cd, co, offs, fields), [cd, co, offs, fields, pieces], (cd, co, offs, fields, 3)]:
            with pytest.raises(TypeError):
                kernels.rank_blocks(*args, maker.texts_args(e._chunk_texts, malformed))  # type: ignore[arg-type]


def test_a_damaged_text_is_reported_as_without_the_ranking(cran_small_chunks: Path, tmp_path: Path) -> None:
    """A chunk text that is not UTF-8: the ranking's call hands back False, and the texts read
    again after it raise as they do without it (CorruptIndexError naming the row)."""
    import apsw

    crafted = tmp_path / "crafted.sqlite3"
    crafted.write_bytes(cran_small_chunks.read_bytes())
    with Engine.open(crafted) as e:
        hit = e.search("flow", 1, with_text=False).hits[0]
        chunk = e._db().execute("SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc "
                                "WHERE d.docid = ? AND c.ordinal = ?", (hit.docid, hit.chunk_ordinal)).fetchone()[0]
    conn = apsw.Connection(str(crafted))
    conn.execute("UPDATE chunks SET text = CAST(X'666C6F77FF' AS TEXT) WHERE id = ?", (chunk,))
    conn.close()
    errors = []
    for fused in (True, False):
        with Engine.open(crafted, options=EngineOptions(texts_with_ranking=fused)) as e:
            with pytest.raises(CorruptIndexError) as info:
                e.search("flow", 1)
            errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_the_rescoring_in_the_rankings_call_is_the_two_calls(cran_index: Path) -> None:
    """rank_blocks / rank_maxscore with `rescore` (the candidates beside clamped terms rescored in
    the same call) against the same ranking with margin, then `rescore` on its candidates: the
    same ranked chunks and scores, and texts; None for both when the candidates do not settle
    the top k; refusals."""
    assert kernels is not None
    with Engine.open(cran_index) as e:
        assert e._chunk_texts is not None
        sc = e.scorer
        compared = 0
        for q in ["the of a flow", "of the pressure distribution", "a theory of the boundary layer",
                  *CRAN_QUERIES[:20]]:
            terms = [t for t in e._postings(e.parse(q), time.monotonic() + 60) if t is not None]
            lists = [t for t in terms if not hasattr(t, "load")]
            if len(lists) == len(terms) or not lists:
                continue
            bound = (len(terms) - len(lists)) * 1e-6 * sc.k1p1
            got = sc._rescore_terms(terms, None)
            assert got is not None
            spec, file = got
            rescore = (spec, file, sc._chunk_len32, sc.k1, sc.b, sc._avgdl, sc.k1p1, 1e-6, sc._chunk_doc32)
            texts = SnippetMaker([("pressur", "pressure", 2.0)]).texts_args(e._chunk_texts)
            for k in (1, 10, 100):
                n, n_full, cut, _ = sc._run(lists, k, bound, None, e._scratch(), time.monotonic() + 60)
                cand = e._scratch().out_chunks[:n].copy()
                _, _, _, (ranked, made) = sc._run(lists, k, bound, None, e._scratch(), time.monotonic() + 60,
                                                  texts, rescore)
                if n_full >= k and cut > bound + 2 * (abs(cut) * 1e-9):
                    want = kernels.rescore(cand.astype(np.uint32), spec, file, sc._chunk_len32, sc.k1, sc.b,
                                           sc._avgdl, sc.k1p1, 1e-6, sc._chunk_doc32, k, texts)
                    assert (ranked, made) == want, (q, k)
                    assert made[0] == e._chunk_texts.read_texts([c for c, _ in ranked])
                    compared += 1
                else:
                    assert ranked is None and made is None
        assert compared >= 20
        # refusals
        args = _kernel_args(e, "pressure distribution boundary layer")
        with pytest.raises(ValueError, match="margin >= 0"):
            kernels.rank_blocks(*args, None, rescore)
        with_margin = (*args[:6], 0.5, *args[7:])
        with pytest.raises(TypeError, match="rescore: a tuple"):
            kernels.rank_blocks(*with_margin, None, list(rescore))
        kind3 = ([*spec, (3, np.zeros(4, dtype=np.uint16))], *rescore[1:])
        with pytest.raises(ValueError, match="kind 3"):
            kernels.rank_blocks(*with_margin, None, kind3)
        settled = kernels.rank_blocks(*with_margin, None, rescore)
        assert len(settled) == 5 and isinstance(settled[3], list) and settled[4] is None  # no texts
        unsettled = (*with_margin[:5], 10**5, *with_margin[6:])  # more documents than there are
        assert kernels.rank_blocks(*unsettled, None, rescore)[3:] == (None, None)
