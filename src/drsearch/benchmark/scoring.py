"""Scoring: graded questions in, ``scores.json`` bodies and readable tables out.

Honest denominators (docs/DESIGN.md, "Evaluation protocol"): accuracy is always over
every expected question. Empty answers, unfinished episodes, agent errors, missing
episodes and failed judge verdicts all count as incorrect, and each is counted
separately so the report shows where the misses came from. Every proportion
carries a Wilson interval.

Determinism: every dict returned here has its keys sorted at every level, breakdown
keys are sorted as strings (a missing value is reported as ``"(unknown)"``), id
lists are sorted, and every float is rounded to :data:`DIGITS` decimal places, so
the same records always serialise to the same bytes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from drsearch.benchmark.records import OUTCOMES, GradedQuestion
from drsearch.benchmark.stats import (
    cohen_kappa,
    mcnemar_exact,
    mean_at_k,
    pass_at_k,
    spearman,
    wilson_interval,
)

DIGITS = 6
"""Decimal places every reported float is rounded to."""

BREAKDOWN_FIELDS = ("tier", "category", "answer_type", "difficulty")
"""The GradedQuestion fields accuracy is broken down by."""

UNKNOWN = "(unknown)"
"""Breakdown key for a question whose field is unset (or that has no record at all)."""

DEFAULT_SOLVED_THRESHOLD = 0.5

_Key = tuple[str, int]


def _canonical(value: Any) -> Any:
    """Sort dict keys at every level and round floats to DIGITS places."""
    if isinstance(value, dict):
        return {str(key): _canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    if isinstance(value, float):
        return round(value, DIGITS)
    return value


def _proportion(count: int, n: int, confidence: float) -> dict[str, Any]:
    low, high = wilson_interval(count, n, confidence)
    return {"count": count, "n": n, "rate": count / n if n else None, "ci": [low, high]}


def _index(items: Iterable[GradedQuestion]) -> dict[_Key, GradedQuestion]:
    """Map (question_id, attempt) to its record; a repeated key is an error."""
    table: dict[_Key, GradedQuestion] = {}
    for item in items:
        key = (item.question_id, item.attempt)
        if key in table:
            raise ValueError(f"question {key[0]!r} attempt {key[1]} is graded twice")
        table[key] = item
    return table


def _first_attempts(items: Iterable[GradedQuestion]) -> dict[str, GradedQuestion]:
    return {qid: item for (qid, attempt), item in _index(items).items() if attempt == 0}


def _question_ids(table: dict[_Key, GradedQuestion], expected_ids: Sequence[str] | None) -> list[str]:
    present = {qid for qid, _ in table}
    if expected_ids is None:
        return sorted(present)
    ids = list(expected_ids)
    if len(set(ids)) != len(ids):
        raise ValueError("expected_ids contains duplicates")
    stray = sorted(present - set(ids))
    if stray:
        raise ValueError(f"graded questions not in expected_ids: {stray[:5]}")
    return ids


def _breakdowns(
    ids: Sequence[str], first: dict[str, GradedQuestion], confidence: float
) -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = {}
    for field in BREAKDOWN_FIELDS:
        values = [getattr(first[qid], field) if qid in first else None for qid in ids]
        if all(value is None for value in values):
            result[field] = {}
            continue
        groups: dict[str, list[bool]] = defaultdict(list)
        for qid, value in zip(ids, values, strict=True):
            groups[UNKNOWN if value is None else str(value)].append(qid in first and first[qid].correct)
        result[field] = {key: _group(hits, confidence) for key, hits in groups.items()}
    return result


def _group(hits: Sequence[bool], confidence: float) -> dict[str, Any]:
    correct = sum(hits)
    low, high = wilson_interval(correct, len(hits), confidence)
    return {"n": len(hits), "correct": correct, "accuracy": correct / len(hits), "ci": [low, high]}


def _per_question(graded: Sequence[GradedQuestion]) -> dict[str, Any]:
    """Means over the questions that have a finished episode: a missing one spent nothing to
    average, and an attempt cut short by an infrastructure failure (outcome ``missing``) is not
    what the model would have spent."""
    graded = [g for g in graded if g.episode_status != "missing" and g.outcome != "missing"]
    n = len(graded)

    def mean(values: Iterable[float]) -> float | None:
        return sum(values) / n if n else None

    timed = [g.wall_s for g in graded if g.wall_s is not None]
    return {
        "n": n,
        "tool_calls": mean(g.tool_calls for g in graded),
        "prompt_tokens": mean(g.prompt_tokens for g in graded),
        "completion_tokens": mean(g.completion_tokens for g in graded),
        "total_tokens": mean(g.prompt_tokens + g.completion_tokens for g in graded),
        "n_timed": len(timed),
        "wall_s": sum(timed) / len(timed) if timed else None,  # over the timed ones: no clock is not 0 s
    }


def _checklist(
    ids: Sequence[str], first: dict[str, GradedQuestion], threshold: float, confidence: float
) -> dict[str, Any] | None:
    scores = [first[qid].score if qid in first else None for qid in ids]
    scored = [s for s in scores if s is not None]
    if not scored:
        return None
    n = len(ids)
    solved = sum(1 for s in scored if s >= threshold)
    return {
        "threshold": threshold,
        "n_scored": len(scored),
        "mean_score": sum(scored) / n,
        "mean_score_scored_only": sum(scored) / len(scored),
        "solved": _proportion(solved, n, confidence),
    }


def _attempts(
    ids: Sequence[str], table: dict[_Key, GradedQuestion], confidence: float
) -> dict[str, Any] | None:
    if all(attempt == 0 for _, attempt in table):
        return None
    n_attempts = max(attempt for _, attempt in table) + 1
    hits = {
        qid: [table[(qid, a)].correct if (qid, a) in table else False for a in range(n_attempts)]
        for qid in ids
    }
    ks = range(1, n_attempts + 1)
    n = len(ids)
    missing = sum(1 for qid in ids for a in range(n_attempts) if (qid, a) not in table)
    passed = {str(k): sum(pass_at_k(n_attempts, sum(h), k) for h in hits.values()) / n for k in ks}
    means = {str(k): sum(mean_at_k(h, k) for h in hits.values()) / n for k in ks}
    return {
        "n_attempts": n_attempts,
        "missing_attempts": missing,
        "accuracy_by_attempt": {
            str(a): _proportion(sum(h[a] for h in hits.values()), n, confidence) for a in range(n_attempts)
        },
        "pass_at_k": passed,
        "mean_at_k": means,
        # Wilson on a mean of [0, 1] values over n questions: conservative (stats.wilson_interval)
        "pass_at_k_ci": {k: list(wilson_interval(v * n, n, confidence)) for k, v in passed.items()},
        "mean_at_k_ci": {k: list(wilson_interval(v * n, n, confidence)) for k, v in means.items()},
    }


def summarize(
    items: Sequence[GradedQuestion],
    *,
    expected_ids: Sequence[str] | None = None,
    solved_threshold: float = DEFAULT_SOLVED_THRESHOLD,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Build the ``scores.json`` body for one graded run.

    The question set is ``expected_ids`` when given (an expected question with no
    attempt-0 record counts as ``missing_episode``, incorrect, with unknown
    breakdown fields — callers that know its tier should pass an explicit
    ``missing_episode`` record instead), otherwise every question id present.
    Headline numbers use attempt 0. With repeated attempts (any ``attempt > 0``),
    ``attempts`` reports pass@k (unbiased estimator) and mean@k (fraction correct
    among attempts ``0..k-1``) for every k from 1 to the number of attempts, each
    averaged over all questions, a missing attempt counting as incorrect.
    ``checklist`` (present when any score exists): mean score over all questions
    with an unscored question counting 0, the mean over scored ones only, and the
    solved rate (score >= ``solved_threshold``) over all questions.
    Every pass@k and mean@k value has its Wilson interval (``*_ci``; conservative for a
    mean of per-question values), and ``accuracy_by_attempt`` gives each attempt's accuracy.
    ``per_question`` means (tool calls, tokens, wall time) cover the attempt-0 records that
    have a finished episode (not ``episode_status == "missing"``, not outcome ``missing``);
    ``n`` says how many.

    Raises ``ValueError`` when a (question, attempt) is graded twice, when
    ``expected_ids`` has duplicates or misses a graded question, or when the
    question set is empty.
    """
    table = _index(items)
    ids = _question_ids(table, expected_ids)
    # a question a spent --max-cost left unstarted in any attempt has no answer to score:
    # left out of every number (never counted wrong) and listed
    not_run = sorted({qid for (qid, _), g in table.items() if g.outcome == "not_run"})
    if not_run:
        table = {key: g for key, g in table.items() if key[0] not in set(not_run)}
        ids = [qid for qid in ids if qid not in set(not_run)]
        if not ids:
            raise ValueError(f"every question is not_run ({len(not_run)}): the run's --max-cost was "
                             "spent before any started; nothing to score")
    if not ids:
        raise ValueError("no questions to score")
    first = {qid: table[(qid, 0)] for qid in ids if (qid, 0) in table}
    outcomes = Counter(first[qid].outcome if qid in first else "missing_episode" for qid in ids)
    n = len(ids)
    body = {
        "n": n,
        "n_graded": len(first),
        "confidence": confidence,
        "interval": "wilson",
        "accuracy": _proportion(outcomes["correct"], n, confidence),
        "outcomes": {outcome: _proportion(outcomes[outcome], n, confidence) for outcome in OUTCOMES},
        "breakdowns": _breakdowns(ids, first, confidence),
        "per_question": _per_question(list(first.values())),
        "checklist": _checklist(ids, first, solved_threshold, confidence),
        "attempts": _attempts(ids, table, confidence),
    }
    if not_run:  # only then: the scores of a run without --max-cost are as before
        body["not_run"] = {"count": len(not_run), "questions": not_run}
    result: dict[str, Any] = _canonical(body)
    return result


UNSCORED_OUTCOMES = ("judge_failed", "missing", "missing_episode")
"""Outcomes that AgentCompass's DeepSearchQA accuracy leaves out of its denominator: no valid
score exists (the judge's reply could not be parsed or its call failed; no finished episode
to grade). Empty answers, unfinished episodes and agent errors are valid scores of 0 there
too (AgentCompass grades an empty answer incorrect without asking the judge)."""


def accuracy_over_valid_scores(summary: dict[str, Any]) -> dict[str, Any]:
    """AgentCompass's DeepSearchQA headline (its "accuracy over tasks with valid scores") from
    a :func:`summarize` body: attempt-0 ``correct`` over the questions whose outcome is not in
    :data:`UNSCORED_OUTCOMES`, with its Wilson interval and what was left out. It is *not*
    drsearch's ``accuracy`` (over every question): with unscored tasks it is the higher one."""
    outcomes = summary["outcomes"]
    left_out = {name: outcomes[name]["count"] for name in UNSCORED_OUTCOMES}
    n = summary["n"] - sum(left_out.values())
    body = {**_proportion(outcomes["correct"]["count"], n, summary["confidence"]),
            "definition": "correct / tasks with a valid score (AgentCompass DeepSearchQA)",
            "left_out": left_out}
    result: dict[str, Any] = _canonical(body)
    return result


def compare_runs(
    a: Sequence[GradedQuestion], b: Sequence[GradedQuestion], *, confidence: float = 0.95
) -> dict[str, Any]:
    """Paired comparison of two runs on the questions both graded (attempt 0).

    Questions graded in only one run are left out of every number and reported
    as ``unpaired`` counts and ids. Returns the 2x2 table (``both_correct``,
    ``a_only``, ``b_only``, ``both_incorrect``), each run's accuracy on the paired
    questions, ``difference`` = accuracy(b) − accuracy(a), the two-sided exact
    McNemar p-value on the discordant pairs, and the flip table: sorted question ids
    that went correct → incorrect and incorrect → correct from ``a`` to ``b``.
    Raises ``ValueError`` when a run grades a question twice.
    """
    first_a, first_b = _first_attempts(a), _first_attempts(b)
    paired = sorted(set(first_a) & set(first_b))
    lost = [qid for qid in paired if first_a[qid].correct and not first_b[qid].correct]
    gained = [qid for qid in paired if not first_a[qid].correct and first_b[qid].correct]
    both = sum(1 for qid in paired if first_a[qid].correct and first_b[qid].correct)
    n = len(paired)
    correct_a, correct_b = both + len(lost), both + len(gained)
    only_a, only_b = sorted(set(first_a) - set(first_b)), sorted(set(first_b) - set(first_a))
    body = {
        "n_paired": n,
        "unpaired": {"only_a": only_a, "only_b": only_b, "n_only_a": len(only_a), "n_only_b": len(only_b)},
        "table": {
            "both_correct": both,
            "a_only": len(lost),
            "b_only": len(gained),
            "both_incorrect": n - both - len(lost) - len(gained),
        },
        "accuracy_a": _proportion(correct_a, n, confidence),
        "accuracy_b": _proportion(correct_b, n, confidence),
        "difference": (correct_b - correct_a) / n if n else None,
        "mcnemar_p": mcnemar_exact(len(lost), len(gained)),
        "flips": {"correct_to_incorrect": lost, "incorrect_to_correct": gained},
    }
    result: dict[str, Any] = _canonical(body)
    return result


JUDGED = frozenset({"correct", "incorrect"})
"""Outcomes a judge decided; every other outcome is fixed before any judge is asked."""


def judge_agreement(
    a: Sequence[GradedQuestion], b: Sequence[GradedQuestion], *, confidence: float = 0.95
) -> dict[str, Any]:
    """Agreement of two judges grading the same run, paired on (question_id, attempt).

    Only records that both judges decided (outcome correct or incorrect) are compared:
    a missing episode, an unfinished one or an empty answer is incorrect whatever the
    judge, and counting those would inflate agreement and kappa. ``n_records`` paired
    records split into ``n`` judged by both, ``not_judged`` (no judge asked) and
    ``judge_failed`` (either judge failed: counts per side). On the ``n``: raw agreement
    (a proportion with its interval), Cohen's kappa (None when ``n`` is 0), the
    disagreeing records as sorted ``[question_id, attempt]`` pairs, and, over those both
    judges scored, Spearman's rho of the checklist scores with ``n_scored`` (rho None when
    undefined, e.g. constant scores).
    Raises ``ValueError`` when a judge grades a record twice, or when a paired record's
    final answer or pre-judge outcome differs (two different runs, not two judges).
    """
    table_a, table_b = _index(a), _index(b)
    paired = sorted(set(table_a) & set(table_b))
    asked = JUDGED | {"judge_failed"}
    for key in paired:
        x, y = table_a[key], table_b[key]
        fixed = x.outcome not in asked or y.outcome not in asked
        if x.final_answer != y.final_answer or (fixed and x.outcome != y.outcome):
            raise ValueError(f"question {key[0]!r} attempt {key[1]}: the two gradings are of different runs "
                             "(answers or episode outcomes differ)")
    keys = [key for key in paired if table_a[key].outcome in JUDGED and table_b[key].outcome in JUDGED]
    labels_a = [table_a[key].correct for key in keys]
    labels_b = [table_b[key].correct for key in keys]
    agree = sum(1 for x, y in zip(labels_a, labels_b, strict=True) if x == y)
    scored = [key for key in keys if table_a[key].score is not None and table_b[key].score is not None]
    scores_a = [float(table_a[key].score or 0.0) for key in scored]
    scores_b = [float(table_b[key].score or 0.0) for key in scored]
    body = {
        "n_records": len(paired),
        "n": len(keys),
        "not_judged": sum(1 for key in paired if table_a[key].outcome not in asked),
        "judge_failed": {"a": sum(1 for key in paired if table_a[key].outcome == "judge_failed"),
                         "b": sum(1 for key in paired if table_b[key].outcome == "judge_failed")},
        "unpaired": {"only_a": len(set(table_a) - set(table_b)), "only_b": len(set(table_b) - set(table_a))},
        "agreement": _proportion(agree, len(keys), confidence),
        "kappa": cohen_kappa(labels_a, labels_b) if keys else None,
        "disagreements": [list(key) for key in keys if table_a[key].correct != table_b[key].correct],
        "n_scored": len(scored),
        "spearman": spearman(scores_a, scores_b) if scored else None,
        "wrong_paper": wrong_paper_agreement([table_a[key] for key in paired],
                                             [table_b[key] for key in paired], confidence=confidence),
    }
    result: dict[str, Any] = _canonical(body)
    return result


def _judged_citations(g: GradedQuestion) -> list[dict[str, Any]]:
    return [c for c in (g.judge or {}).get("citations") or () if isinstance(c, dict)]


def wrong_paper_agreement(a: Sequence[GradedQuestion], b: Sequence[GradedQuestion], *,
                          confidence: float = 0.95) -> dict[str, Any]:
    """Agreement of two support judges on the binary wrong-paper verdict (the paper's L2).

    ``a`` and ``b`` are the same records graded twice (paired in order). A citation is
    compared when both audits found its record and both judges gave a support verdict; the
    label is wrong paper (support ``no``) or not (``yes`` or ``partial``). Citations pair by
    their position in the answer, kind and value (one answer, one extraction). Returns
    ``n``, raw agreement with its interval, Cohen's kappa (None when ``n`` is 0), the 2×2
    counts (``both``, ``a_only``, ``b_only``, ``neither``) and the judges' models.
    """
    labels_a: list[bool] = []
    labels_b: list[bool] = []
    models_a: set[str] = set()
    models_b: set[str] = set()
    for x, y in zip(a, b, strict=True):
        for cx, cy in zip(_judged_citations(x), _judged_citations(y), strict=False):
            if (cx.get("kind"), cx.get("value")) != (cy.get("kind"), cy.get("value")):
                raise ValueError(f"question {x.question_id!r}: the two audits cite different identifiers "
                                 "(different runs, or different citation extraction)")
            if cx.get("existence") != "found" or cy.get("existence") != "found" \
                    or cx.get("support") is None or cy.get("support") is None:
                continue
            labels_a.append(cx["support"] == "no")
            labels_b.append(cy["support"] == "no")
            models_a.add(str((cx.get("support_judge") or {}).get("model")))
            models_b.add(str((cy.get("support_judge") or {}).get("model")))
    n = len(labels_a)
    pairs = list(zip(labels_a, labels_b, strict=True))
    agree = sum(x == y for x, y in pairs)
    return {"a_only": pairs.count((True, False)), "agreement": _proportion(agree, n, confidence),
            "b_only": pairs.count((False, True)), "both": pairs.count((True, True)),
            "judges": {"a": sorted(models_a), "b": sorted(models_b)},
            "kappa": cohen_kappa(labels_a, labels_b) if n else None, "n": n,
            "neither": pairs.count((False, False))}


def _fmt_rate(value: float | None) -> str:
    return "   n/a" if value is None else f"{value:6.4f}"


def _fmt_ci(ci: Sequence[float]) -> str:
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def render_table(summary: dict[str, Any]) -> str:
    """Render a :func:`summarize` body as a plain-text report (no trailing newline).

    Shows the accuracy with its interval, every outcome count, each non-empty
    breakdown, per-question means, and the checklist and pass@k sections when present.
    """
    acc = summary["accuracy"]
    pct = round(summary["confidence"] * 100)
    lines = [
        f"questions  {summary['n']}  (with an episode {summary['per_question']['n']})",
        f"accuracy   {_fmt_rate(acc['rate'])}  {_fmt_ci(acc['ci'])}  "
        f"({acc['count']}/{acc['n']}, Wilson {pct}% CI)",
    ]
    valid = summary.get("accuracy_over_valid_scores")
    if valid is not None:  # named for what it is: not the headline above
        lines[1] += "  over all questions"
        lines.append(f"accuracy   {_fmt_rate(valid['rate'])}  {_fmt_ci(valid['ci'])}  "
                     f"({valid['count']}/{valid['n']}) over validly scored tasks (AgentCompass)")
    lines += [
        "",
        f"{'outcome':<18}{'count':>7}{'rate':>9}  {pct}% CI",
    ]
    for outcome in OUTCOMES:
        row = summary["outcomes"][outcome]
        lines.append(f"{outcome:<18}{row['count']:>7}{_fmt_rate(row['rate']):>9}  {_fmt_ci(row['ci'])}")
    for field in BREAKDOWN_FIELDS:
        groups = summary["breakdowns"].get(field) or {}
        if not groups:
            continue
        width = max(len(field), *(len(key) for key in groups)) + 2
        lines += ["", f"{field:<{width}}{'n':>6}{'correct':>9}{'accuracy':>10}  {pct}% CI"]
        for key, row in groups.items():
            lines.append(
                f"{key:<{width}}{row['n']:>6}{row['correct']:>9}{_fmt_rate(row['accuracy']):>10}  "
                f"{_fmt_ci(row['ci'])}"
            )
    not_run = (summary.get("not_run") or {}).get("count")
    if not_run:
        lines.append(f"{'not run':<18}{not_run:>7}  (--max-cost spent before they started: no answer, "
                     "left out of every number above)")
    lines += _render_means(summary["per_question"])
    lines += _render_checklist(summary.get("checklist"), pct)
    lines += _render_attempts(summary.get("attempts"))
    return "\n".join(lines)


def _render_means(means: dict[str, Any]) -> list[str]:
    if not means["n"]:
        return ["", "per question: no episodes"]
    return [
        "",
        f"per question (mean over {means['n']} with an episode)",
        f"  tool calls         {means['tool_calls']:.2f}",
        f"  prompt tokens      {means['prompt_tokens']:.1f}",
        f"  completion tokens  {means['completion_tokens']:.1f}",
        f"  total tokens       {means['total_tokens']:.1f}",
        "  wall time (s)      " + ("n/a (no timings.jsonl)" if means["wall_s"] is None else
                                   f"{means['wall_s']:.2f}" + (f" (over {means['n_timed']} timed)"
                                                               if means["n_timed"] != means["n"] else "")),
    ]


def _render_checklist(checklist: dict[str, Any] | None, pct: int) -> list[str]:
    if not checklist:
        return []
    solved = checklist["solved"]
    return [
        "",
        f"checklist  scored {checklist['n_scored']}  mean score {checklist['mean_score']:.4f} "
        f"(scored only {checklist['mean_score_scored_only']:.4f})",
        f"solved (score >= {checklist['threshold']})  {_fmt_rate(solved['rate'])}  {_fmt_ci(solved['ci'])}  "
        f"({solved['count']}/{solved['n']}, Wilson {pct}% CI)",
    ]


def _render_attempts(attempts: dict[str, Any] | None) -> list[str]:
    if not attempts:
        return []
    lines = [
        "",
        f"attempts  {attempts['n_attempts']}  (missing {attempts['missing_attempts']})",
        f"{'k':>4}{'pass@k':>10}  {'CI':<18}{'mean@k':>8}  CI",
    ]
    for k in sorted(attempts["pass_at_k"], key=int):
        lines.append(f"{k:>4}{attempts['pass_at_k'][k]:>10.4f}  {_fmt_ci(attempts['pass_at_k_ci'][k]):<18}"
                     f"{attempts['mean_at_k'][k]:>8.4f}  {_fmt_ci(attempts['mean_at_k_ci'][k])}")
    return lines
