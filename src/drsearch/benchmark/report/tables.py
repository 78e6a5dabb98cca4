"""The report's numbers: status counts, totals, accuracy by group with Wilson intervals, the
DrBencher E × P grid and the paired comparisons (``scoring.compare_runs``, as ``drsearch
compare`` prints them). Pure functions of the rows :mod:`.load` reads."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

from ..scoring import compare_runs
from ..stats import wilson_interval
from .load import NOT_RUN, STATUS_LABELS, Run

GROUP_FIELDS = (("tier", "tier"), ("domain", "domain"), ("bucket", "bucket"), ("difficulty", "difficulty"),
                ("cci", "CCI (DrBencher)"))
"""Episode-row fields accuracy is broken down by, with their titles; a field no question carries
is left out."""


def graded_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows accuracy counts: all but the questions ``--max-cost`` never started ("not
    run"), which scores.json leaves out of every denominator too."""
    return [r for r in rows if r["status"] != NOT_RUN]


def status_counts(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(r["status"] for r in rows)
    return {**{s: counts[s] for s in STATUS_LABELS}, **{s: n for s, n in sorted(counts.items())
                                                       if s not in STATUS_LABELS}}


def proportion(correct: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(correct, n) if n else (0.0, 1.0)
    return {"ci": [round(low, 6), round(high, 6)], "correct": correct, "n": n,
            "rate": round(correct / n, 6) if n else None}


def _sum(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return round(float(sum(values)), 6) if values else None


def totals(run: Run) -> dict[str, Any]:
    """Accuracy, status counts, tokens, tool calls, time and cost of one run."""
    rows = run.episodes
    ran = [r for r in rows if r["status"] != "no episode"]
    n = len(ran) or 1
    cost = run.cost if run.cost is not None else _sum(rows, "cost")
    return {
        "accuracy": proportion(sum(r["correct"] for r in graded_rows(rows)), len(graded_rows(rows))),
        "status": status_counts(rows),
        "questions": len(rows),
        "tool_calls": sum(r["tool_calls"] for r in rows),
        "tool_calls_mean": round(sum(r["tool_calls"] for r in ran) / n, 6),
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
        "completion_tokens": sum(r["completion_tokens"] for r in rows),
        "tokens_mean": round(sum(r["total_tokens"] for r in ran) / n, 6),
        "wall_s": _sum(rows, "wall_s"),
        "cost": cost,
        "with_leak": sum(r["leak_turn"] is not None for r in rows),
    }


def groups(rows: Sequence[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    """Accuracy per value of ``key`` (numeric values in numeric order), ``{}`` when no row has one.

    Where the rows carry checklist scores (OpenBioRQ), each group also has ``mean_score``: the
    mean over all its questions, an unscored one counting 0 (as ``scores.json``'s checklist).
    Questions never run (``--max-cost``) are in no group."""
    rows = graded_rows(rows)
    if all(r[key] in (None, "") for r in rows):
        return {}
    members: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        members.setdefault("(unknown)" if r[key] in (None, "") else r[key], []).append(r)
    scored = any(r["score"] is not None for r in rows)

    def order(k: Any) -> tuple[int, float, str]:
        return (0, float(k), "") if isinstance(k, int | float) else (1, 0.0, str(k))

    out = {}
    for k in sorted(members, key=order):
        group = members[k]
        out[str(k)] = proportion(sum(bool(r["correct"]) for r in group), len(group))
        if scored:
            out[str(k)]["mean_score"] = round(sum(r["score"] or 0.0 for r in group) / len(group), 6)
    return out


def grid(rows: Sequence[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """DrBencher's E (entities) × P (properties) cells: accuracy per cell; ``{}`` without CCI."""
    cells: dict[tuple[int, int], list[bool]] = {}
    for r in graded_rows(rows):
        if isinstance(r["cci_E"], int) and isinstance(r["cci_P"], int):
            cells.setdefault((r["cci_E"], r["cci_P"]), []).append(bool(r["correct"]))
    return {k: proportion(sum(v), len(v)) for k, v in sorted(cells.items())}


def comparisons(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Every pair of runs (in the order given): ``drsearch compare``'s paired table."""
    return [{"a": a.label, "b": b.label, **compare_runs(a.graded, b.graded)}
            for a, b in combinations(runs, 2)]


__all__ = ["GROUP_FIELDS", "comparisons", "graded_rows", "grid", "groups", "proportion", "status_counts",
           "totals"]
