"""TREC files and measures: topics (TSV), run files, qrels, and trec_eval's core measures.

Formats (whitespace-separated; each line checked, a bad one is an error naming file:line):

* topics: ``qid<TAB>query text`` per line (Pyserini's/MS MARCO's TSV); empty lines skipped.
* run: ``qid Q0 docid rank score tag`` per line.
* qrels: ``qid iteration docid relevance`` per line (relevance an integer; > 0 is relevant).

Measures, as trec_eval computes them (``map``, ``P_10``, ``recall_1000``, ``ndcg_cut_10``):
a run's lines are re-ranked per query by score descending, ties by docid *descending*
(trec_eval's order; the rank column is ignored); gains are the qrels' relevance levels
(negative counted as 0); nDCG's ideal ordering is over all judged gains of the query.
Means are over the queries of the qrels that have a relevant document; such a query absent
from the run scores 0 on every measure and is counted (``missing``), never skipped quietly.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..contract import InvalidInputError

MEASURES = ("ndcg@10", "map", "p@10", "recall@1000")

Qrels = dict[str, dict[str, int]]  # qid -> docid -> relevance
Run = dict[str, dict[str, float]]  # qid -> docid -> score


class TrecFormatError(InvalidInputError):
    """A topics, run or qrels file that does not follow its format (CLI exit 2)."""

    error_type = "invalid_trec_file"


def _lines(path: str | os.PathLike[str]) -> Iterable[tuple[int, str]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TrecFormatError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TrecFormatError(f"{path}: cannot read ({e.__class__.__name__}: {e})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield n, line


def read_topics(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """``[(qid, query)]`` in file order. Raises TrecFormatError (no tab, empty qid or query,
    whitespace in a qid, a repeated qid, no topic at all)."""
    topics: list[tuple[str, str]] = []
    seen: set[str] = set()
    for n, line in _lines(path):
        qid, tab, query = line.partition("\t")
        qid = qid.strip()
        if not tab:
            raise TrecFormatError(f"{path}:{n}: expected 'qid<TAB>query'")
        if not qid or qid.split() != [qid]:
            raise TrecFormatError(f"{path}:{n}: the qid must be one word, got {qid!r}")
        if not query.strip():
            raise TrecFormatError(f"{path}:{n}: topic {qid} has an empty query")
        if qid in seen:
            raise TrecFormatError(f"{path}:{n}: topic {qid} appears twice")
        seen.add(qid)
        topics.append((qid, query.strip()))
    if not topics:
        raise TrecFormatError(f"{path}: no topics")
    return topics


def check_run_field(what: str, value: str) -> str:
    """``value`` if it can be one column of a run file (non-empty, no whitespace), else
    TrecFormatError naming ``what`` (``"run tag"``, ``"qid"``, ``"docid"``)."""
    if not value or value.split() != [value]:
        raise TrecFormatError(f"{what} {value!r} cannot be written to a run file (empty or has whitespace)")
    return value


def run_lines(ranked: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> Iterable[str]:
    """Run-file lines (with ``\\n``): for each qid in the mapping's order, its
    ``(docid, score)`` pairs in the given order, ranked from 1. Scores are written with
    ``repr`` (shortest exact form) so re-reading them gives back the same order."""
    check_run_field("run tag", tag)
    for qid, hits in ranked.items():
        check_run_field("qid", qid)
        for rank, (docid, score) in enumerate(hits, 1):
            yield f"{qid} Q0 {check_run_field('docid', docid)} {rank} {float(score)!r} {tag}\n"


def write_run(ranked: Mapping[str, Sequence[tuple[str, float]]], out: TextIO, tag: str) -> int:
    """Write :func:`run_lines` to ``out``; returns the number of lines."""
    n = 0
    for line in run_lines(ranked, tag):
        out.write(line)
        n += 1
    return n


def read_run(path: str | os.PathLike[str]) -> Run:
    """``{qid: {docid: score}}``. Raises TrecFormatError (not 6 fields, a score that is not a
    finite number, a docid twice for one query)."""
    run: Run = {}
    for n, line in _lines(path):
        fields = line.split()
        if len(fields) != 6:
            raise TrecFormatError(
                f"{path}:{n}: expected 'qid Q0 docid rank score tag', got {len(fields)} fields")
        qid, _, docid, _, score_text, _ = fields
        try:
            score = float(score_text)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise TrecFormatError(f"{path}:{n}: score {score_text!r} is not a finite number")
        docs = run.setdefault(qid, {})
        if docid in docs:
            raise TrecFormatError(f"{path}:{n}: docid {docid} appears twice for query {qid}")
        docs[docid] = score
    return run


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """``{qid: {docid: relevance}}``. Raises TrecFormatError (not 4 fields, a relevance that is
    not an integer, a judgment twice, no judgment at all)."""
    qrels: Qrels = {}
    for n, line in _lines(path):
        fields = line.split()
        if len(fields) != 4:
            raise TrecFormatError(
                f"{path}:{n}: expected 'qid iteration docid relevance', got {len(fields)} fields")
        qid, _, docid, rel = fields
        try:
            level = int(rel)
        except ValueError:
            raise TrecFormatError(f"{path}:{n}: relevance {rel!r} is not an integer") from None
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            raise TrecFormatError(f"{path}:{n}: docid {docid} is judged twice for query {qid}")
        judged[docid] = level
    if not qrels:
        raise TrecFormatError(f"{path}: no judgments")
    return qrels


def _ranking(scores: Mapping[str, float]) -> list[str]:
    """trec_eval's order: score descending, then docid descending."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def query_measures(judged: Mapping[str, int], scores: Mapping[str, float]) -> dict[str, float]:
    """The four measures of one query (see the module docstring)."""
    gains = {d: max(0, g) for d, g in judged.items()}
    n_rel = sum(1 for g in gains.values() if g > 0)
    ranking = _ranking(scores)
    hits = 0
    precision_sum = 0.0
    for i, d in enumerate(ranking, 1):
        if gains.get(d, 0) > 0:
            hits += 1
            precision_sum += hits / i
    dcg = sum(gains.get(d, 0) / math.log2(i + 1) for i, d in enumerate(ranking[:10], 1))
    ideal = sorted(gains.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    return {
        "ndcg@10": dcg / idcg if idcg > 0 else 0.0,
        "map": precision_sum / n_rel if n_rel else 0.0,
        "p@10": sum(1 for d in ranking[:10] if gains.get(d, 0) > 0) / 10,
        "recall@1000": sum(1 for d in ranking[:1000] if gains.get(d, 0) > 0) / n_rel if n_rel else 0.0,
    }


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Mean measures over ``queries`` evaluated queries, ``missing`` of them absent from the
    run (scored 0); ``ignored``: run queries without a relevant judgment (not evaluated)."""

    means: dict[str, float]
    per_query: dict[str, dict[str, float]]
    queries: int
    missing: int
    ignored: int

    def to_dict(self) -> dict[str, object]:
        return {"ignored": self.ignored, "means": self.means, "missing": self.missing,
                "per_query": self.per_query, "queries": self.queries}


def evaluate(qrels: Qrels, run: Run) -> Evaluation:
    """Measures of ``run`` against ``qrels`` (queries in qid order; means as documented)."""
    evaluated = sorted(q for q, judged in qrels.items() if any(g > 0 for g in judged.values()))
    if not evaluated:
        raise InvalidInputError("the qrels have no relevant document for any query")
    per_query = {q: query_measures(qrels[q], run.get(q, {})) for q in evaluated}
    means = {m: sum(v[m] for v in per_query.values()) / len(evaluated) for m in MEASURES}
    missing = sum(1 for q in evaluated if q not in run)
    ignored = sum(1 for q in run if q not in per_query)
    return Evaluation(means, per_query, len(evaluated), missing, ignored)


__all__ = ["MEASURES", "Evaluation", "Qrels", "Run", "TrecFormatError", "check_run_field", "evaluate",
           "query_measures",
           "read_qrels", "read_run", "read_topics", "run_lines", "write_run"]
