"""Scoring a run on DrBencher questions: entity identification, accuracy by CCI, trend and
paired tests. ``drsearch score --judge numeric`` adds :func:`drbencher_summary` to
``scores.json`` when the questions are DrBencher rows; ``drsearch compare RUN_A
RUN_B --majority`` runs :func:`majority_compare` (two graded runs of 3 attempts each).

- :func:`entity_identified`: the final answer **or** the trace names a withheld entity
  (label or alias, case-insensitive, word boundaries) — a verdict separate from the
  answer's correctness (a model may find the entity and miscompute, or guess the number);
- :func:`accuracy_by_cci`: correct / n per CCI level with Wilson intervals;
- :func:`jonckheere_terpstra`: the ordered-alternatives trend test of correctness across
  CCI levels (statistic J = Σ_{i<j} U_ij, ties ½; the exact permutation p where the sample is
  small enough (:mod:`.jtexact`), else the normal approximation with the tie-corrected
  variance — equal to Kendall's tau test between level and outcome);
- :func:`majority_mcnemar`: two runs of 3 attempts each, a question counted correct by a run
  when ≥ 2 of its 3 attempts are; the exact McNemar test on the discordant questions;
- :func:`majority_compare`: the same over two graded files (``scores.graded.jsonl``), with the
  checks that make it meaningful (3 attempts per question, the same questions in both).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...stats import mcnemar_exact, wilson_interval
from .checks import mentions
from .jtexact import exact_tails
from .tables import (
    Attempt,
    accuracy_by_domain,
    accuracy_grid,
    benchmark_summary,
    cci_trend,
    failure_stage1,
)

if TYPE_CHECKING:
    from ...records import GradedQuestion


def entity_identified(answer: str, trace: Iterable[str], entities: Sequence[Mapping[str, Any]]) -> bool:
    """Does the answer or any trace text name one of ``entities`` (``label``/``aliases``)?"""
    texts = [answer, *trace]
    return any(mentions(t, name) for e in entities for name in (e["label"], *e.get("aliases", ()))
               for t in texts)


def accuracy_by_cci(rows: Iterable[tuple[int, bool]], confidence: float = 0.95) -> dict[str, dict[str, Any]]:
    """``{cci: {n, correct, accuracy, ci}}`` (levels as strings, ascending) from (cci, correct)."""
    levels: dict[int, list[bool]] = {}
    for cci, ok in rows:
        levels.setdefault(int(cci), []).append(bool(ok))
    out = {}
    for cci in sorted(levels):
        hits = levels[cci]
        k = sum(hits)
        out[str(cci)] = {"accuracy": k / len(hits), "ci": list(wilson_interval(k, len(hits), confidence)),
                         "correct": k, "n": len(hits)}
    return out


EXACT_METHOD = "exact permutation distribution (ties included)"
NORMAL_METHOD = "normal approximation, tie-corrected variance"


def _norm_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def jonckheere_terpstra(groups: Sequence[Sequence[float]], exact: bool = True) -> dict[str, Any]:
    """``{J, mean, var, z, p, p_decreasing, p_increasing, method}`` for groups in their
    hypothesised order (lowest level first).

    J counts, over every pair of groups i < j and every pair of values (x from i, y from j),
    1 when x < y and ½ when x = y. ``p_decreasing`` is one-sided against values that fall
    along the order (the paper's alternative: accuracy falls as CCI rises), ``p_increasing``
    against values that rise, ``p`` two-sided. With ``exact`` and a sample small enough
    (:mod:`.jtexact`: the permutation distribution of J given the observed values, ties
    included, within :data:`~.jtexact.EXACT_MAX_STEPS` steps) they are exact: P(J ≤ J_obs),
    P(J ≥ J_obs) and twice the smaller (at most 1); otherwise the normal approximation with
    the tie-corrected variance (Lehmann): Φ(z), 1 − Φ(z), 2(1 − Φ(|z|)). ``method`` says
    which; ``mean``, ``var`` and ``z`` are reported either way. Raises ValueError with fewer
    than two non-empty groups or no variance (every value equal)."""
    groups = [list(g) for g in groups if len(g)]
    if len(groups) < 2:
        raise ValueError("need at least two non-empty groups")
    j = 0.0
    for a in range(len(groups)):
        for b in range(a + 1, len(groups)):
            for x in groups[a]:
                for y in groups[b]:
                    j += 1.0 if x < y else 0.5 if x == y else 0.0
    sizes = [len(g) for g in groups]
    n = sum(sizes)
    values = [v for g in groups for v in g]
    ties = [values.count(v) for v in sorted(set(values))]
    mean = (n * n - sum(m * m for m in sizes)) / 4.0
    var = (n * (n - 1) * (2 * n + 5) - sum(m * (m - 1) * (2 * m + 5) for m in sizes)
           - sum(t * (t - 1) * (2 * t + 5) for t in ties)) / 72.0
    var += (sum(m * (m - 1) * (m - 2) for m in sizes) * sum(t * (t - 1) * (t - 2) for t in ties)) / (
        36.0 * n * (n - 1) * (n - 2))
    var += (sum(m * (m - 1) for m in sizes) * sum(t * (t - 1) for t in ties)) / (8.0 * n * (n - 1))
    if var <= 0:
        raise ValueError("no variance: every value is equal")
    z = (j - mean) / math.sqrt(var)
    out: dict[str, Any] = {"J": j, "mean": mean, "var": var, "z": z}
    tails = exact_tails(groups, j) if exact else None
    if tails is not None:
        low, high = tails
        return {**out, "method": EXACT_METHOD, "p": min(1.0, 2.0 * min(low, high)), "p_decreasing": low,
                "p_increasing": high}
    return {**out, "method": NORMAL_METHOD, "p": min(1.0, 2.0 * _norm_sf(abs(z))),
            "p_decreasing": _norm_sf(-z), "p_increasing": _norm_sf(z)}


def majority_mcnemar(run_a: Mapping[str, Sequence[bool]],
                     run_b: Mapping[str, Sequence[bool]]) -> dict[str, Any]:
    """Majority-vote McNemar between two runs of 3 attempts per question (same questions)."""
    if set(run_a) != set(run_b):
        raise ValueError("the runs cover different questions")
    b = c = 0
    for qid in sorted(run_a):
        if len(run_a[qid]) != 3 or len(run_b[qid]) != 3:
            raise ValueError(f"{qid}: need 3 attempts in each run")
        a_ok, b_ok = sum(run_a[qid]) >= 2, sum(run_b[qid]) >= 2
        b += a_ok and not b_ok
        c += b_ok and not a_ok
    return {"a_only": b, "b_only": c, "n": len(run_a), "p": mcnemar_exact(b, c)}


MAJORITY_ATTEMPTS = (0, 1, 2)
"""The attempts a majority vote needs per question: ``drsearch score`` numbers them from 0."""


def _votes(graded: Sequence[GradedQuestion], side: str) -> dict[str, list[bool]]:
    """``{question_id: [correct of attempt 0, 1, 2]}``; ValueError unless each question has
    exactly attempts 0, 1 and 2, each graded once."""
    by_qid: dict[str, dict[int, bool]] = {}
    for g in graded:
        attempts = by_qid.setdefault(g.question_id, {})
        if g.attempt in attempts:
            raise ValueError(f"{g.question_id}: attempt {g.attempt} graded twice in run {side}")
        attempts[g.attempt] = g.correct
    if not by_qid:
        raise ValueError(f"run {side} has no graded questions")
    for qid in sorted(by_qid):
        if tuple(sorted(by_qid[qid])) != MAJORITY_ATTEMPTS:
            found = ", ".join(map(str, sorted(by_qid[qid])))
            raise ValueError(f"{qid}: run {side} has attempt(s) {found}; the majority vote needs exactly "
                             "3 attempts (0, 1, 2) per question in each run")
    return {qid: [v[n] for n in MAJORITY_ATTEMPTS] for qid, v in by_qid.items()}


def majority_compare(a: Sequence[GradedQuestion], b: Sequence[GradedQuestion]) -> dict[str, Any]:
    """Majority-vote McNemar between two graded runs of 3 attempts per question.

    A question counts as correct in a run when at least 2 of its 3 attempts are. Returns
    :func:`majority_mcnemar`'s ``a_only``, ``b_only``, ``n`` and ``p`` (two-sided exact
    McNemar on the discordant questions), plus ``both_correct``, ``both_incorrect``, each
    run's majority accuracy (``accuracy_a``/``accuracy_b``: correct, rate) and the flips
    (sorted ids, ``correct_to_incorrect`` = correct in A only). Raises ``ValueError`` (one
    line) when a question lacks one of attempts 0, 1, 2 or has one twice in a run, or when
    the runs grade different questions: unlike the attempt-0 comparison nothing is left
    out silently, because a majority over other questions is another test."""
    votes_a, votes_b = _votes(a, "A"), _votes(b, "B")
    only_a, only_b = sorted(set(votes_a) - set(votes_b)), sorted(set(votes_b) - set(votes_a))
    if only_a or only_b:
        examples = "; ".join(f"{len(ids)} only in {side} (e.g. {ids[0]})"
                             for side, ids in (("A", only_a), ("B", only_b)) if ids)
        raise ValueError(f"the runs grade different questions: {examples}")
    result = majority_mcnemar(votes_a, votes_b)
    maj_a = {q: sum(v) >= 2 for q, v in votes_a.items()}
    maj_b = {q: sum(v) >= 2 for q, v in votes_b.items()}
    n = result["n"]
    both = sum(maj_a[q] and maj_b[q] for q in maj_a)
    result.update({
        "accuracy_a": {"correct": sum(maj_a.values()), "rate": sum(maj_a.values()) / n},
        "accuracy_b": {"correct": sum(maj_b.values()), "rate": sum(maj_b.values()) / n},
        "attempts": len(MAJORITY_ATTEMPTS), "both_correct": both,
        "both_incorrect": n - both - result["a_only"] - result["b_only"],
        "flips": {"correct_to_incorrect": sorted(q for q in maj_a if maj_a[q] and not maj_b[q]),
                  "incorrect_to_correct": sorted(q for q in maj_a if maj_b[q] and not maj_a[q])}})
    return result




def _trace(episode: Mapping[str, Any] | None) -> list[str]:
    """Every text of an episode the agent wrote or read (messages, tool-call arguments)."""
    if not episode:
        return []
    texts = [str(m.get("content") or "") for m in episode.get("messages", [])]
    for m in episode.get("messages", []):
        for call in m.get("tool_calls") or []:
            texts.append(str(call.get("function", {}).get("arguments", "")))
    return texts


def question_metadata(questions: Path) -> dict[str, dict[str, Any]]:
    """``{question id: metadata.drbencher + {"domain": metadata.category}}`` of a questions
    file's DrBencher rows (empty when it has none)."""
    meta: dict[str, dict[str, Any]] = {}
    for line in questions.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            block = row.get("metadata", {}).get("drbencher")
            if block is not None:
                meta[row["metadata"]["qid"]] = {**block, "domain": row["metadata"].get("category")}
    return meta


def _attempt(g: Any, identified: bool) -> Attempt:
    verdict = (g.judge or {}).get("verdict")
    return Attempt(question_id=g.question_id, correct=bool(g.correct), identified=identified,
                   answered=verdict is not None,
                   parse_error=None if verdict is None else verdict.get("parse_error"),
                   relative_error=None if verdict is None else verdict.get("relative_error"))


def drbencher_summary(questions: Path, graded: Sequence[Any], runs: Sequence[Any]) -> dict[str, Any] | None:
    """The ``drbencher`` block of ``scores.json`` (None when the questions carry no
    ``metadata.drbencher``): entity identification and accuracy by CCI over every graded
    attempt, with Wilson intervals, and the paper's tables (:mod:`.tables`): ``benchmark``
    (Table 2), ``by_domain`` (Table 4), ``grid`` (Table 5), ``cci_trend`` (Spearman's ρ and the
    one-sided Jonckheere–Terpstra test; a reason where undefined) and ``failures`` (failure
    analysis stage 1)."""
    meta = question_metadata(questions)
    if not meta:
        return None
    attempts: list[Attempt] = []
    for g in graded:
        m = meta.get(g.question_id)
        if m is None:
            continue
        episode = runs[g.attempt].episodes.get(g.question_id) if g.attempt < len(runs) else None
        attempts.append(_attempt(g, entity_identified(g.final_answer or "", _trace(episode), m["entities"])))
    table = accuracy_by_cci((int(meta[a.question_id]["cci"]["total"]), a.correct) for a in attempts)
    k = sum(a.identified for a in attempts)
    return {"accuracy_by_cci": table, "attempts": len(attempts),
            "benchmark": benchmark_summary(meta), "by_domain": accuracy_by_domain(meta, attempts),
            "cci_trend": cci_trend(meta, attempts),
            "entity_identification": {"ci": list(wilson_interval(k, len(attempts))), "identified": k,
                                      "rate": k / len(attempts) if attempts else None},
            "failures": failure_stage1(attempts), "grid": accuracy_grid(meta, attempts)}


__all__ = ["MAJORITY_ATTEMPTS", "accuracy_by_cci", "drbencher_summary", "entity_identified",
           "jonckheere_terpstra", "majority_compare", "majority_mcnemar", "question_metadata"]
