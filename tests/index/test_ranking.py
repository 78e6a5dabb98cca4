"""Our numpy scorer against FTS5's own bm25(): same lists, same order, same scores."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from drsearch.index import Engine

from ..helpers import best_chunk_per_doc, blocklist_of, cranfield_queries

QUERIES = cranfield_queries()


@pytest.fixture(scope="module")
def engine(cran_small_chunks: Path) -> Engine:
    return Engine.open(cran_small_chunks)


@pytest.mark.parametrize("k", [10, 100])
def test_identical_to_fts5_bm25_on_all_cranfield_queries(engine: Engine, k: int) -> None:
    mismatches = []
    for q in QUERIES:
        ours = engine.rank(q, k)
        oracle = best_chunk_per_doc(engine, engine.fts5_rank(q, 100_000), k)
        if ours != oracle:  # compares chunk rowids and bit-identical float scores, in order
            mismatches.append(q)
    assert not mismatches, f"{len(mismatches)}/{len(QUERIES)} differ, e.g. {mismatches[:2]}"


def test_queries_with_common_terms_are_still_exact(engine: Engine) -> None:
    # 'the', 'of', 'a' are in more than half of the chunks: IDF clamped to 1e-6. Ties galore.
    for q in ["the of a", "the flow", "a theory of the boundary layer", "of", "is the and of"]:
        oracle = best_chunk_per_doc(engine, engine.fts5_rank(q, 100_000), 20)
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


def test_blocked_hits_are_replaced_not_dropped(cran_small_chunks: Path) -> None:
    q = QUERIES[0]
    with Engine.open(cran_small_chunks) as plain:
        top = plain.search(q, k=10).hits
        more = plain.search(q, k=13).hits
    blocked = [top[0].docid, top[3].docid, top[7].docid]
    with Engine.open(cran_small_chunks, blocklist_of(*blocked)) as e:
        hits = e.search(q, k=10).hits
        assert len(hits) == 10
        assert not {h.docid for h in hits} & set(blocked)
        assert [h.docid for h in hits] == [h.docid for h in more if h.docid not in blocked]
        assert [h.rank for h in hits] == list(range(1, 11))


def test_blocklist_holds_for_every_query(cran_small_chunks: Path) -> None:
    with Engine.open(cran_small_chunks) as plain:
        blocked = {plain.search(q, k=1).hits[0].docid for q in QUERIES[:40] if plain.search(q, k=1).hits}
    with Engine.open(cran_small_chunks, blocklist_of(*blocked)) as e:
        for q in QUERIES:
            assert not {h.docid for h in e.search(q, k=20, with_text=False).hits} & blocked
