"""The Pyserini-shaped searcher: same ranking as the engine, deep k, blocklist, batches."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import drsearch.compat
from drsearch.compat import LuceneSearcher
from drsearch.contract import InvalidInputError, InvalidKError, InvalidQueryError
from drsearch.index import Engine

from ..helpers import DATA, blocklist_of, cranfield_queries, sample_docs

QUERIES = cranfield_queries()[:24]


def test_public_api() -> None:
    assert set(drsearch.compat.__all__) == {
        "MEASURES", "Document", "Evaluation", "Hit", "LuceneSearcher", "TrecFormatError", "check_run_field", "evaluate",
        "query_measures", "read_qrels", "read_run", "read_topics", "run_lines", "write_run"}


def test_search_is_the_engines_ranking(sample_index: Path) -> None:
    with Engine.open(sample_index) as engine, LuceneSearcher(sample_index) as s:
        for q in ("antikythera mechanism", "volcano eruption history", "the"):
            expected = engine.search(q, 10)
            hits = s.search(q, k=10)
            assert [(h.docid, h.score, h.rank) for h in hits] == [(h.docid, h.score, h.rank) for h in expected.hits]
        hit = s.search("antikythera mechanism", 1)[0]
        doc = engine.open_document(docid=hit.docid)
        assert hit.contents == f"{doc.title}\n{doc.text}" and hit.url == doc.url and hit.title == doc.title
        assert json.loads(hit.raw) == {"id": doc.docid, "contents": hit.contents, "title": doc.title,
                                       "url": doc.url}
        got = s.doc(hit.docid)
        assert got is not None and got.raw() == hit.raw and got.docid() == got.id() == hit.docid
        assert got.contents() == hit.contents
        assert s.num_docs == len(sample_docs())


def test_deep_k_extends_the_engines_top_100(cran_index: Path) -> None:
    with Engine.open(cran_index) as engine, LuceneSearcher(engine) as s:
        for q in QUERIES[:6]:
            deep = s.search(q, k=1000)
            assert len(deep) > 100
            assert [h.docid for h in deep[:100]] == [h.docid for h in engine.search(q, 100).hits]
            assert all(a.score >= b.score for a, b in itertools.pairwise(deep))
        with pytest.raises(InvalidKError):
            engine.search(QUERIES[0], 101)  # the API's own limit is unchanged
        with pytest.raises(InvalidKError):
            s.search(QUERIES[0], 10_001)
        with pytest.raises(InvalidKError):
            s.search(QUERIES[0], 0)


def test_blocked_documents_are_absent_like_unknown_ones(sample_index: Path) -> None:
    with LuceneSearcher(sample_index) as plain:
        top = plain.search("antikythera mechanism", 5)
    blocked = top[0].docid
    with LuceneSearcher(sample_index, blocked_docids=blocklist_of(blocked)) as s:
        assert s.doc(blocked) is None and s.doc("no-such-docid") is None
        assert blocked not in [h.docid for h in s.search("antikythera mechanism", 100)]
        assert s.num_docs == len(sample_docs()) - 1
    with LuceneSearcher(sample_index, blocked_docids=DATA / "sample/blocked_docids.txt") as s:
        assert s.num_docs < len(sample_docs())


def test_batch_search_is_the_same_for_any_thread_count(cran_index: Path) -> None:
    qids = [f"q{i}" for i in range(len(QUERIES))]
    with LuceneSearcher(cran_index) as s:
        one = s.batch_search(QUERIES, qids, k=50, threads=1)
        many = s.batch_search(QUERIES, qids, k=50, threads=4)
        again = s.batch_search(QUERIES, qids, k=50, threads=4)  # the kept pool, reused
        assert list(one) == list(many) == qids
        flat = [[(h.docid, h.score) for h in hits] for hits in one.values()]
        assert flat == [[(h.docid, h.score) for h in hits] for hits in many.values()]
        assert flat == [[(h.docid, h.score) for h in hits] for hits in again.values()]
        assert flat[3] == [(h.docid, h.score) for h in s.search(QUERIES[3], 50)]


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda s: s.batch_search(["a"], ["1", "2"]), InvalidInputError, "1 queries but 2 qids"),
    (lambda s: s.batch_search(["a", "b"], ["1", "1"]), InvalidInputError, "qids must be distinct"),
    (lambda s: s.batch_search(["a"], ["1"], threads=0), InvalidInputError, "threads"),
    (lambda s: s.batch_search("ab", "12"), InvalidInputError, "lists of strings"),
    (lambda s: s.search("   "), InvalidQueryError, "query is empty"),
    (lambda s: s.search("x" * 40_000), InvalidQueryError, "the limit is"),
    (lambda s: s.doc(7), InvalidInputError, "docid must be a string"),
])
def test_bad_input_raises(sample_engine: Engine, call: object, error: type[Exception], message: str) -> None:
    s = LuceneSearcher(sample_engine)
    with pytest.raises(error, match=message):
        call(s)  # type: ignore[operator]
