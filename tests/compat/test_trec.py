"""TREC files and measures: trec_eval's numbers (cross-checked with pytrec_eval) on Cranfield."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import pytrec_eval

from drsearch.compat import (
    LuceneSearcher,
    TrecFormatError,
    evaluate,
    read_qrels,
    read_run,
    read_topics,
    write_run,
)

TREC_NAMES = {"ndcg@10": "ndcg_cut_10", "map": "map", "p@10": "P_10", "recall@1000": "recall_1000"}


def _pytrec(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, set(TREC_NAMES.values())).evaluate(run)


def _assert_same(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]) -> None:
    assert set(theirs) <= set(ours)
    for qid, measures in theirs.items():
        for name, trec in TREC_NAMES.items():
            assert ours[qid][name] == pytest.approx(measures[trec], abs=1e-12), (qid, name)


def test_cranfield_run_measures_equal_pytrec_eval(cran_index: Path, cran_topics: Path, cran_qrels: Path,
                                                  tmp_path: Path) -> None:
    topics = read_topics(cran_topics)
    assert len(topics) == 225
    with LuceneSearcher(cran_index) as s:
        hits = s.batch_search([t for _, t in topics], [q for q, _ in topics], k=1000, threads=2)
    run_file = tmp_path / "run.trec"
    with run_file.open("w") as fh:
        n = write_run({q: [(h.docid, h.score) for h in hs] for q, hs in hits.items()}, fh, "t")
    assert n == sum(len(h) for h in hits.values()) and n > 200 * 225
    qrels, run = read_qrels(cran_qrels), read_run(run_file)
    ours = evaluate(qrels, run)
    theirs = _pytrec(qrels, run)
    assert len(theirs) == ours.queries == 225 and ours.missing == 0
    _assert_same(ours.per_query, theirs)
    # the ranking is a real one: well above what an unordered run gets
    assert ours.means["ndcg@10"] > 0.3 and ours.means["recall@1000"] > 0.9


def test_ties_break_as_trec_eval_does() -> None:
    qrels = {"1": {"a": 1, "b": 2, "c": 0, "z": 3}, "2": {"x": 1}}
    run = {"1": {d: 1.0 for d in "abcdefghijklmnopz"}, "2": {"y": 2.0, "x": 2.0, "w": 1.0}}
    _assert_same(evaluate(qrels, run).per_query, _pytrec(qrels, run))


def test_a_query_missing_from_the_run_scores_zero_and_is_counted() -> None:
    qrels = {"1": {"a": 1}, "2": {"b": 1}, "3": {"c": 0}}
    ev = evaluate(qrels, {"1": {"a": 1.0}, "9": {"a": 1.0}})
    assert (ev.queries, ev.missing, ev.ignored) == (2, 1, 1)
    assert ev.means["map"] == 0.5 and ev.per_query["2"]["ndcg@10"] == 0.0


def test_run_lines_round_trip_scores_exactly(tmp_path: Path) -> None:
    buf = io.StringIO()
    write_run({"q1": [("d1", 1 / 3), ("d2", 1e-7)], "q2": []}, buf, "tag")
    assert buf.getvalue() == f"q1 Q0 d1 1 {1 / 3!r} tag\nq1 Q0 d2 2 1e-07 tag\n"
    (tmp_path / "r").write_text(buf.getvalue())
    assert read_run(tmp_path / "r") == {"q1": {"d1": 1 / 3, "d2": 1e-7}}


@pytest.mark.parametrize(("kind", "text", "message"), [
    ("topics", "1 no tab here\n", ":1: expected 'qid<TAB>query'"),
    ("topics", "1\tok\n\n1\tagain\n", ":3: topic 1 appears twice"),
    ("topics", "1\t   \n", ":1: topic 1 has an empty query"),
    ("topics", "a b\tquery\n", ":1: the qid must be one word"),
    ("topics", "\n\n", ": no topics"),
    ("run", "1 Q0 d 1 0.5\n", ":1: expected 'qid Q0 docid rank score tag', got 5 fields"),
    ("run", "1 Q0 d 1 nan t\n", ":1: score 'nan' is not a finite number"),
    ("run", "1 Q0 d 1 1 t\n1 Q0 d 2 0 t\n", ":2: docid d appears twice for query 1"),
    ("qrels", "1 0 d high\n", ":1: relevance 'high' is not an integer"),
    ("qrels", "1 0 d\n", ":1: expected 'qid iteration docid relevance', got 3 fields"),
    ("qrels", "", ": no judgments"),
])
def test_bad_files_name_the_line(tmp_path: Path, kind: str, text: str, message: str) -> None:
    path = tmp_path / kind
    path.write_text(text)
    reader = {"topics": read_topics, "run": read_run, "qrels": read_qrels}[kind]
    with pytest.raises(TrecFormatError) as e:
        reader(path)
    assert message in e.value.message and str(path) in e.value.message


def test_unwritable_names_are_refused() -> None:
    with pytest.raises(TrecFormatError, match="docid 'a b'"):
        write_run({"1": [("a b", 1.0)]}, io.StringIO(), "t")
    with pytest.raises(TrecFormatError, match="run tag"):
        write_run({"1": [("a", 1.0)]}, io.StringIO(), "my tag")
