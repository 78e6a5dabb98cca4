"""The DrBencher paper's tables from a graded run (``drsearch score --judge numeric``).

Each function takes the exported questions' ``metadata.drbencher`` blocks (keyed by question
id, with the domain added) and, where it needs them, the graded attempts as
:class:`Attempt` rows; each returns plain dicts for ``scores.json``:

- :func:`benchmark_summary` (Table 2): per domain and over all questions, the unique
  templates, entity topics and grounding articles, and the means of E, P, CCI = E + P,
  grounded chains per question, hops per chain and hops per question;
- :func:`accuracy_by_domain` (Table 4): entity identification (Ent) and answer accuracy
  (Ans) per domain over every graded attempt, with Wilson intervals;
- :func:`accuracy_grid` (Table 5): accuracy per (E, P) cell over every graded attempt;
- :func:`cci_trend`: over questions (each question's fraction of correct attempts, the
  paper's "average of runs"), Spearman's ρ between CCI and correctness with scipy's
  two-sided p, and the one-sided Jonckheere–Terpstra test of a *decreasing* trend across CCI
  levels (exact permutation p for small samples, else the normal approximation with the
  tie-corrected variance: :func:`.scoring.jonckheere_terpstra`);
- :func:`failure_stage1` (failure analysis, stage 1): every incorrect attempt by the
  magnitude of its relative error and whether it identified the entity.

A chain's hops are the hops its grounded fact uses (1: the entity's own edge; 2: through the
intermediate entity); a question's chains are its grounded facts over every entity it
describes (the answer and a two-entity template's partner).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...stats import wilson_interval

ALL = "all"
"""The row over every domain."""

FAILURE_BUCKETS = ("no_answer", "no_number", "not_comparable", "within_2pct", "2_to_50pct", "over_50pct")
"""Failure analysis stage 1's relative-error classes, in the order printed:

- ``no_answer``: no final answer (empty, unfinished episode, agent error, missing);
- ``no_number``: an answer that is not one number;
- ``not_comparable``: a number with no relative error (a date, a unit of another dimension,
  a gold of 0);
- ``within_2pct``: |a − g| / |g| ≤ 2 % yet incorrect (an exact-match domain);
- ``2_to_50pct``: 2 % < error ≤ 50 % ("close but wrong": stage 2 splits wrong property values
  from arithmetic mistakes there);
- ``over_50pct``: error > 50 %."""


@dataclass(frozen=True)
class Attempt:
    """One graded attempt: its question, correctness, entity verdict and numeric verdict."""

    question_id: str
    correct: bool
    identified: bool
    answered: bool
    """A final answer was given (not empty, not a failed episode)."""
    parse_error: str | None = None
    relative_error: float | None = None


def _grounded(clues: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Grounded facts as the Clues stage counts them: one per chain and one per triple, in order."""
    chains: set[int] = set()
    triples: set[tuple[str, ...]] = set()
    out = []
    for v in clues:
        triple = tuple(v["triple"])
        if v.get("verdict") == "grounded" and v["chain"] not in chains and triple not in triples:
            chains.add(v["chain"])
            triples.add(triple)
            out.append(v)
    return out


def question_facts(meta: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every grounded fact a question is written from: the answer's, then each partner's."""
    facts = _grounded(meta.get("clues", ()))
    for e in meta.get("entities", ())[1:]:
        facts += _grounded(e.get("clues", ()))
    return facts


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _summary_row(metas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    facts = [question_facts(m) for m in metas]
    hops = [int(f["hops"]) for fs in facts for f in fs]
    articles = {d for m in metas for e in [m, *m.get("entities", ())[1:]] if (d := e.get("article_docid"))}
    topics = [m.get("topic") for m in metas]
    return {
        "questions": len(metas),
        "templates": len({m["template"] for m in metas}),
        "topics": len({str(t) for t in topics}) if all(t is not None for t in topics) else None,
        "articles": len(articles),
        "E": _mean([float(m["cci"]["E"]) for m in metas]),
        "P": _mean([float(m["cci"]["P"]) for m in metas]),
        "CCI": _mean([float(m["cci"]["total"]) for m in metas]),
        "chains_per_question": _mean([float(len(fs)) for fs in facts]),
        "hops_per_chain": _mean([float(h) for h in hops]),
        "hops_per_question": _mean([float(sum(int(f["hops"]) for f in fs)) for fs in facts]),
    }


def _by_domain(meta: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for qid in sorted(meta):
        groups.setdefault(str(meta[qid]["domain"]), []).append(qid)
    return dict(sorted(groups.items()))


def benchmark_summary(meta: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Table 2: ``{domain: row, ..., "all": row}`` over the questions (not the attempts).

    A row: ``questions``, unique ``templates``, unique ``topics`` (None when a row lacks its
    topic: files exported before it was recorded), unique grounding ``articles`` (the answer's
    and each partner's), and the means ``E``, ``P``, ``CCI``, ``chains_per_question``,
    ``hops_per_chain`` (over every grounded chain) and ``hops_per_question``."""
    out = {d: _summary_row([meta[q] for q in qids]) for d, qids in _by_domain(meta).items()}
    out[ALL] = _summary_row([meta[q] for q in sorted(meta)])
    return out


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"ci": list(wilson_interval(k, n)), "count": k, "n": n, "rate": k / n if n else None}


def accuracy_by_domain(meta: Mapping[str, Mapping[str, Any]],
                       attempts: Sequence[Attempt]) -> dict[str, dict[str, Any]]:
    """Table 4: ``{domain: {questions, attempts, entity, answer}, ..., "all": ...}``; ``entity``
    and ``answer`` are proportions over the domain's graded attempts (with one attempt per
    question per run, the mean of the runs' rates) with Wilson intervals."""
    domain_of = {q: str(m["domain"]) for q, m in meta.items()}
    groups: dict[str, list[Attempt]] = {d: [] for d in sorted(set(domain_of.values()))}
    for a in attempts:
        groups[domain_of[a.question_id]].append(a)
    groups[ALL] = list(attempts)
    out = {}
    for d, rows in groups.items():
        questions = len({a.question_id for a in rows})
        out[d] = {"answer": _rate(sum(a.correct for a in rows), len(rows)), "attempts": len(rows),
                  "entity": _rate(sum(a.identified for a in rows), len(rows)), "questions": questions}
    return out


def accuracy_grid(meta: Mapping[str, Mapping[str, Any]],
                  attempts: Sequence[Attempt]) -> dict[str, dict[str, Any]]:
    """Table 5: ``{"E": {"P": {questions, attempts, correct, accuracy, ci, cci}}}`` over the
    graded attempts; only the (E, P) cells some question falls in."""
    cells: dict[tuple[int, int], list[Attempt]] = {}
    questions: dict[tuple[int, int], set[str]] = {}
    for a in attempts:
        cci = meta[a.question_id]["cci"]
        key = (int(cci["E"]), int(cci["P"]))
        cells.setdefault(key, []).append(a)
        questions.setdefault(key, set()).add(a.question_id)
    grid: dict[str, dict[str, Any]] = {}
    for (e, p) in sorted(cells):
        rows = cells[(e, p)]
        k = sum(r.correct for r in rows)
        grid.setdefault(str(e), {})[str(p)] = {
            "accuracy": k / len(rows), "attempts": len(rows), "cci": e + p,
            "ci": list(wilson_interval(k, len(rows))), "correct": k, "questions": len(questions[(e, p)])}
    return grid


def average_ranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..n, tied values sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's ρ: Pearson's correlation of the average ranks. None when undefined (fewer
    than three pairs, or either side constant)."""
    if len(x) != len(y):
        raise ValueError(f"sequences differ in length: {len(x)} != {len(y)}")
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy)


def spearman_p(rho: float, n: int) -> float:
    """Two-sided p of ρ over ``n`` pairs: Student's t with n − 2 degrees of freedom,
    ``t = ρ·sqrt((n − 2) / (1 − ρ²))`` (scipy's ``spearmanr``); 0 when |ρ| = 1."""
    from ...stats import _scipy_stats

    if abs(rho) >= 1.0:
        return 0.0
    t = rho * math.sqrt((n - 2) / (1.0 - rho * rho))
    return min(1.0, float(2.0 * _scipy_stats().t.sf(abs(t), n - 2)))


def per_question(attempts: Sequence[Attempt]) -> dict[str, float]:
    """``{question_id: fraction of its attempts correct}``."""
    hits: dict[str, list[bool]] = {}
    for a in attempts:
        hits.setdefault(a.question_id, []).append(a.correct)
    return {q: sum(v) / len(v) for q, v in sorted(hits.items())}


def cci_trend(meta: Mapping[str, Mapping[str, Any]], attempts: Sequence[Attempt]) -> dict[str, Any]:
    """Correctness against CCI over the graded questions (each its fraction correct):
    ``{n, spearman: {rho, p, alternative}, jonckheere_terpstra: {J, mean, var, z, p,
    p_decreasing, p_increasing, method}}``; a test that is undefined (one CCI level, constant
    correctness) is ``{"error": reason}``."""
    from .scoring import jonckheere_terpstra

    score = per_question(attempts)
    cci = {q: int(meta[q]["cci"]["total"]) for q in score}
    qids = sorted(score)
    rho = spearman_rho([float(cci[q]) for q in qids], [score[q] for q in qids])
    spearman: dict[str, Any] = (
        {"error": "undefined: fewer than 3 questions, or CCI or correctness constant"} if rho is None else
        {"alternative": "two-sided", "p": spearman_p(rho, len(qids)), "rho": rho})
    levels = sorted(set(cci.values()))
    jt: dict[str, Any]
    try:
        jt = jonckheere_terpstra([[score[q] for q in qids if cci[q] == c] for c in levels])
    except ValueError as e:
        jt = {"error": str(e)}
    return {"jonckheere_terpstra": jt, "levels": levels, "n": len(qids), "spearman": spearman}


def failure_bucket(a: Attempt) -> str:
    """The :data:`FAILURE_BUCKETS` class of an incorrect attempt."""
    if not a.answered:
        return "no_answer"
    if a.parse_error is not None:
        return "no_number"
    if a.relative_error is None:
        return "not_comparable"
    if a.relative_error <= 0.02:
        return "within_2pct"
    return "2_to_50pct" if a.relative_error <= 0.5 else "over_50pct"


def failure_stage1(attempts: Sequence[Attempt]) -> dict[str, Any]:
    """``{failures, buckets: {bucket: {identified, not_identified, total}}}`` over the
    incorrect attempts, every bucket of :data:`FAILURE_BUCKETS` present (0 when empty)."""
    failed = [a for a in attempts if not a.correct]
    buckets = {b: {"identified": 0, "not_identified": 0, "total": 0} for b in FAILURE_BUCKETS}
    for a in failed:
        row = buckets[failure_bucket(a)]
        row["identified" if a.identified else "not_identified"] += 1
        row["total"] += 1
    return {"buckets": buckets, "failures": len(failed),
            "identified": sum(a.identified for a in failed)}


__all__ = ["ALL", "FAILURE_BUCKETS", "Attempt", "accuracy_by_domain", "accuracy_grid", "average_ranks",
           "benchmark_summary", "cci_trend", "failure_bucket", "failure_stage1", "per_question",
           "question_facts", "spearman_p", "spearman_rho"]
