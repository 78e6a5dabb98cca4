"""OpenBioRQ's tables (the paper's §5, Appendix C, Table 7) from graded runs.

Per run (``scores.json`` ``openbiorq``), over the questions of the export, first attempt:

- ``domains`` / ``tracks``: per level-one domain (``metadata.openbiorq.taxonomy``) and per
  track, with Wilson 95 % intervals:

  - ``response_coverage``: attempts over the items: a finished episode with a nonempty final
    answer that is not a written refusal (``behaviour.is_refusal``), so 1 − ``non_attempt``;
  - ``solve_rate``: solved (checklist score ≥ the threshold) over the items;
  - ``zero_tool``: answers given (refusals included) without a single tool call over the
    answers given (the paper's zero-tool collapse);
  - ``wrong_paper``: the paper's L2 rate, over the citations the audit found and judged
    (``drsearch score --audit-citations``), those judged not to support their claim; with no
    audit it has ``n`` 0 and rate null;
  - ``frozen_core_share``: the domain's (track's) items in the frozen core over the frozen
    core (Table 7's rc%);

- ``wrong_paper_by_kind``: the L2 rate per identifier type (``pmid``, ``nct``, …);
- ``criteria``: the score by criterion type. ``mean_value`` is Σw·v / Σw over every criterion
  of the type that a judge scored (v = 1, 0.5, 0; inverted for must_avoid as the score is);
  ``contribution`` is the mean over scored answers of Σ_type w·v / Σ_all w, so the four
  contributions add up to the mean checklist score;
- ``wrong_paper_vs_must_ground``: over the answers with at least one judged citation and at
  least one must_ground criterion, the 2×2 table of *exposure* "every must_ground criterion
  met" against *outcome* "at least one wrong-paper citation", with the risk ratio (Katz log
  interval) and the odds ratio (Woolf logit interval), 95 %. When a cell is 0, 0.5 is added
  to every cell (Haldane–Anscombe) for both estimates and intervals, and ``corrected`` says so;
  with a whole row or column empty both are null.

Across runs (:func:`leaderboard`): each model's solve rate on the whole set, the core and
the frozen core with Wilson intervals, and the per-domain and per-track table of every
metric as a micro-average (counts pooled over the models) and a macro-average (the mean of the
models' rates, models with an empty denominator left out).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..contract import InvalidInputError
from .behaviour import is_refusal
from .datasets._jsonl import read_objects
from .datasets.openbiorq_taxonomy import DOMAIN_LABELS, TRACK_NAMES, domain_name
from .grade import FINISHED
from .records import GradedQuestion
from .stats import wilson_interval

UNLABELLED = "(unlabelled)"
METRICS = ("response_coverage", "solve_rate", "zero_tool", "wrong_paper")
CRITERION_TYPES = ("must_mention", "must_acknowledge", "must_ground", "must_avoid")
_Z95 = 1.959963984540054  # Φ⁻¹(0.975)


def item_facts(row: Mapping[str, Any]) -> dict[str, Any]:
    """``{task_id, domain, track, bucket, frozen_core}`` of one exported row (``items.jsonl``)."""
    meta = (row.get("metadata") or {}).get("openbiorq") or {}
    difficulty = meta.get("difficulty") or {}
    domain = meta.get("taxonomy") or row.get("taxonomy") or row.get("domain")
    return {"bucket": difficulty.get("bucket"), "domain": domain if isinstance(domain, str) else UNLABELLED,
            "frozen_core": difficulty.get("frozen_core") is True, "task_id": row["task_id"],
            "track": str(row.get("track") or UNLABELLED)}


def read_item_facts(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """:func:`item_facts` of every row of an OpenBioRQ export, in file order (InvalidInputError,
    naming file:line, for a line that is not a JSON object with a ``task_id``)."""
    facts = []
    for where, row in read_objects(path):
        if not isinstance(row.get("task_id"), str):
            raise InvalidInputError(f"{where}: task_id: a string is required")
        facts.append(item_facts(row))
    return facts


def _rate(count: float, n: int) -> dict[str, Any]:
    low, high = wilson_interval(count, n)
    return {"ci95": [round(low, 6), round(high, 6)], "count": count, "n": n,
            "rate": round(count / n, 6) if n else None}


def _answered(episode: Mapping[str, Any] | None) -> bool:
    answer = None if episode is None else episode.get("final_answer")
    return episode is not None and episode.get("status") in FINISHED and isinstance(answer, str) \
        and bool(answer.strip())


def _zero_tool(episode: Mapping[str, Any]) -> bool:
    counted = (episode.get("accounting") or {}).get("tool_calls", {})
    return not episode.get("tool_calls") and not sum(counted.values())


def _judged_citations(g: GradedQuestion | None) -> list[Mapping[str, Any]]:
    cites = ((g.judge or {}).get("citations") or ()) if g is not None else ()
    return [c for c in cites if c.get("existence") == "found" and c.get("support") is not None]


def answer_facts(graded: Sequence[GradedQuestion], episodes: Mapping[str, Mapping[str, Any]],
                 question_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per question id, what the tables count: answered, solved, zero_tool, the judged
    citations' ``(kind, wrong_paper)`` pairs and the checklist verdicts (first attempt)."""
    first = {g.question_id: g for g in graded if g.attempt == 0}
    facts = {}
    for qid in question_ids:
        e, g = episodes.get(qid), first.get(qid)
        answered = _answered(e)
        verdict = ((g.judge or {}).get("verdict") or {}) if g is not None else {}
        attempted = answered and e is not None and not is_refusal(str(e["final_answer"]))
        facts[qid] = {"answered": answered, "attempted": attempted,
                      "solved": bool(g is not None and g.correct),
                      "zero_tool": answered and e is not None and _zero_tool(e),
                      "citations": [(str(c["kind"]), c["support"] == "no") for c in _judged_citations(g)],
                      "criteria": list(verdict.get("criteria") or ()) if isinstance(verdict, dict) else []}
    return facts


def _counts(facts: Iterable[Mapping[str, Any]], frozen: int,
            total_frozen: int) -> dict[str, tuple[float, int]]:
    rows = list(facts)
    answered = [f for f in rows if f["answered"]]
    cites = [wrong for f in rows for _, wrong in f["citations"]]
    return {"response_coverage": (sum(f["attempted"] for f in rows), len(rows)),
            "solve_rate": (sum(f["solved"] for f in rows), len(rows)),
            "zero_tool": (sum(f["zero_tool"] for f in answered), len(answered)),
            "wrong_paper": (sum(cites), len(cites)), "frozen_core_share": (frozen, total_frozen)}


def _groups(items: Sequence[Mapping[str, Any]], key: str, order: Sequence[str]) -> list[str]:
    present = {str(i[key]) for i in items}
    return [g for g in order if g in present] + sorted(present - set(order))


def _table(items: Sequence[Mapping[str, Any]], facts: Mapping[str, Mapping[str, Any]], key: str,
           order: Sequence[str]) -> dict[str, dict[str, Any]]:
    total_frozen = sum(i["frozen_core"] for i in items)
    out = {}
    for group in _groups(items, key, order):
        members = [i for i in items if i[key] == group]
        counts = _counts((facts[i["task_id"]] for i in members), sum(i["frozen_core"] for i in members),
                         total_frozen)
        out[group] = {"items": len(members), **{m: _rate(c, n) for m, (c, n) in counts.items()}}
    return out


def criterion_decomposition(facts: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per criterion type: ``mean_value`` (Σw·v/Σw), ``contribution`` (mean share of the score)
    and ``criteria`` (how many were scored), over answers a judge scored."""
    weighted = dict.fromkeys(CRITERION_TYPES, 0.0)
    weights = dict.fromkeys(CRITERION_TYPES, 0)
    counted = dict.fromkeys(CRITERION_TYPES, 0)
    contribution = dict.fromkeys(CRITERION_TYPES, 0.0)
    scored = 0
    for f in facts:
        criteria = [c for c in f["criteria"] if c.get("type") in weights]
        total = sum(int(c["weight"]) for c in criteria)
        if not total:
            continue
        scored += 1
        for c in criteria:
            t, w, v = c["type"], int(c["weight"]), float(c["value"])
            weighted[t] += w * v
            weights[t] += w
            counted[t] += 1
            contribution[t] += w * v / total
    return {t: {"contribution": round(contribution[t] / scored, 6) if scored else None,
                "criteria": counted[t],
                "mean_value": round(weighted[t] / weights[t], 6) if weights[t] else None}
            for t in CRITERION_TYPES} | {"answers_scored": {"n": scored}}


def two_by_two(a: int, b: int, c: int, d: int) -> dict[str, Any]:
    """Risk ratio ``(a/(a+b)) / (c/(c+d))`` and odds ratio ``ad/bc`` with 95 % intervals.

    Rows are exposed (a, b) and unexposed (c, d); columns outcome yes, no. Katz's log
    interval for the risk ratio (SE² = 1/a − 1/(a+b) + 1/c − 1/(c+d)) and Woolf's for the
    odds ratio (SE² = 1/a + 1/b + 1/c + 1/d), exp(log estimate ± 1.959964·SE). A zero cell
    adds 0.5 to every cell first (``corrected``); an empty row or column gives nulls.
    """
    table = {"a": a, "b": b, "c": c, "d": d}
    empty = a + b == 0 or c + d == 0 or a + c == 0 or b + d == 0
    corrected = not empty and 0 in (a, b, c, d)
    if empty:
        return {"corrected": False, "odds_ratio": None, "odds_ratio_ci95": None, "risk_ratio": None,
                "risk_ratio_ci95": None, "table": table}
    x, y, z, w = (float(v) + (0.5 if corrected else 0.0) for v in (a, b, c, d))
    rr = (x / (x + y)) / (z / (z + w))
    se_rr = math.sqrt(1 / x - 1 / (x + y) + 1 / z - 1 / (z + w))
    odds = (x * w) / (y * z)
    se_or = math.sqrt(1 / x + 1 / y + 1 / z + 1 / w)

    def ci(estimate: float, se: float) -> list[float]:
        centre = math.log(estimate)
        return [round(math.exp(centre - _Z95 * se), 6), round(math.exp(centre + _Z95 * se), 6)]

    return {"corrected": corrected, "odds_ratio": round(odds, 6), "odds_ratio_ci95": ci(odds, se_or),
            "risk_ratio": round(rr, 6), "risk_ratio_ci95": ci(rr, se_rr), "table": table}


def wrong_paper_vs_must_ground(facts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The 2×2 of "every must_ground criterion met" × "a wrong-paper citation" (module doc)."""
    cells = {"a": 0, "b": 0, "c": 0, "d": 0}
    for f in facts:
        grounds = [c for c in f["criteria"] if c.get("type") == "must_ground"]
        if not f["citations"] or not grounds:
            continue
        met = all(c.get("verdict") == "met" for c in grounds)
        wrong = any(w for _, w in f["citations"])
        cells["a" if met and wrong else "b" if met else "c" if wrong else "d"] += 1
    result = two_by_two(cells["a"], cells["b"], cells["c"], cells["d"])
    result["rows"] = "exposed: every must_ground criterion met (a, b); unexposed: not (c, d)"
    result["columns"] = "outcome: at least one wrong-paper citation (a, c); none (b, d)"
    result["ci_method"] = ("risk ratio: Katz log; odds ratio: Woolf logit; 95 %; 0.5 added to every cell "
                           "if one is 0")
    return result


def by_kind(facts: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The L2 wrong-paper rate per identifier type over the judged citations."""
    pairs = [p for f in facts for p in f["citations"]]
    kinds = sorted({k for k, _ in pairs})
    return {k: _rate(sum(w for kk, w in pairs if kk == k), sum(1 for kk, _ in pairs if kk == k))
            for k in kinds}


def run_tables(items: Sequence[Mapping[str, Any]], graded: Sequence[GradedQuestion],
               episodes: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The per-run tables (module doc) over ``items`` (:func:`item_facts` of each exported row)."""
    facts = answer_facts(graded, episodes, [i["task_id"] for i in items])
    return {"criteria": criterion_decomposition(facts.values()),
            "domains": _table(items, facts, "domain", DOMAIN_LABELS),
            "tracks": _table(items, facts, "track", TRACK_NAMES),
            "wrong_paper_by_kind": by_kind(facts.values()),
            "wrong_paper_vs_must_ground": wrong_paper_vs_must_ground(facts.values())}


def _averages(per_model: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Micro (pooled counts) and macro (mean of rates) of one table cell over the models."""
    out = {}
    for metric in (*METRICS, "frozen_core_share"):
        cells = [m[metric] for m in per_model if metric in m]
        count, n = sum(c["count"] for c in cells), sum(c["n"] for c in cells)
        rates = [c["rate"] for c in cells if c["rate"] is not None]
        out[metric] = {"macro": round(sum(rates) / len(rates), 6) if rates else None, "models": len(rates),
                       "micro": _rate(count, n)}
    return out


def _subset_solve(graded: Mapping[str, GradedQuestion], ids: Sequence[str]) -> dict[str, Any]:
    return _rate(sum(1 for i in ids if (g := graded.get(i)) is not None and g.correct), len(ids))


def leaderboard(items: Sequence[Mapping[str, Any]], runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``runs``: ``{name, model, graded, episodes}`` each. Rows sorted by whole-set solve rate
    (descending), then name; ``domains`` and ``tracks`` hold micro- and macro-averages."""
    ids = [i["task_id"] for i in items]
    core = [i["task_id"] for i in items if i["bucket"] == "core"]
    frozen = [i["task_id"] for i in items if i["frozen_core"]]
    rows, tables = [], []
    for run in runs:
        first = {g.question_id: g for g in run["graded"] if g.attempt == 0}
        rows.append({"core": _subset_solve(first, core), "frozen_core": _subset_solve(first, frozen),
                     "model": run["model"], "questions_sha256": run.get("questions_sha256"),
                     "run": run["name"],
                     "whole": _subset_solve(first, ids)})
        tables.append(run_tables(items, run["graded"], run["episodes"]))
    rows.sort(key=lambda r: (-(r["whole"]["rate"] or 0.0), r["run"]))
    body: dict[str, Any] = {"items": {"core": len(core), "frozen_core": len(frozen), "whole": len(ids)},
                            "rows": rows}
    for key in ("domains", "tracks"):
        groups = list(dict.fromkeys(g for t in tables for g in t[key]))
        body[key] = {g: {"items": next(t[key][g]["items"] for t in tables if g in t[key]),
                         **_averages([t[key][g] for t in tables if g in t[key]])} for g in groups}
    body["per_run"] = {run["name"]: t for run, t in zip(runs, tables, strict=True)}
    return body


def _ordered(groups: Iterable[str], key: str) -> list[str]:
    """Groups in the paper's order (scores.json sorts its keys), unknown ones after."""
    return _groups([{"g": g} for g in groups], "g", DOMAIN_LABELS if key == "domains" else TRACK_NAMES)


def _pct(cell: Mapping[str, Any]) -> str:
    return "   -  " if cell.get("rate") is None else f"{100 * cell['rate']:5.1f}%"


def render_run_tables(tables: Mapping[str, Any]) -> str:
    """The per-run tables as text (Table 7's columns, then the decompositions)."""
    lines: list[str] = []
    for key, title, name in (("domains", "domain", domain_name), ("tracks", "track", str)):
        order = _ordered(tables[key], key)
        lines.append(f"{title:<30} {'items':>5}  {'coverage':>8}  {'solved':>7}  {'zero-tool':>9}  "
                     f"{'wrong-paper':>11}  {'frozen-core':>11}")
        for group in order:  # scores.json sorts its keys: the paper's order again
            cell = tables[key][group]
            lines.append(f"{name(group):<30} {cell['items']:>5}  {_pct(cell['response_coverage']):>8}  "
                         f"{_pct(cell['solve_rate']):>7}  {_pct(cell['zero_tool']):>9}  "
                         f"{_pct(cell['wrong_paper']):>11}  {_pct(cell['frozen_core_share']):>11}")
        lines.append("")
    kinds = tables["wrong_paper_by_kind"]
    lines.append("wrong paper by identifier: " + ("; ".join(
        f"{k} {v['count']}/{v['n']} ({_pct(v).strip()})" for k, v in kinds.items()) or "no judged citations"))
    crit = tables["criteria"]
    lines.append("score by criterion type (mean value / contribution): " + "; ".join(
        f"{t} {_num(crit[t]['mean_value'])} / {_num(crit[t]['contribution'])}" for t in CRITERION_TYPES))
    assoc = tables["wrong_paper_vs_must_ground"]
    t = assoc["table"]
    lines.append(f"wrong paper vs must_ground met: a={t['a']} b={t['b']} c={t['c']} d={t['d']}; "
                 f"RR {_num(assoc['risk_ratio'])} {_ci(assoc['risk_ratio_ci95'])}, "
                 f"OR {_num(assoc['odds_ratio'])} {_ci(assoc['odds_ratio_ci95'])}"
                 + (" (0.5 added to each cell)" if assoc["corrected"] else ""))
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ci(ci: Sequence[float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def render_leaderboard(body: Mapping[str, Any]) -> str:
    """The leaderboard as text: one row per run, then the micro/macro domain and track tables."""
    def cell(c: Mapping[str, Any]) -> str:
        if c["rate"] is None:
            return f"{'-':>22}"
        return f"{100 * c['rate']:5.1f}% [{100 * c['ci95'][0]:4.1f}, {100 * c['ci95'][1]:5.1f}]".rjust(22)

    n = body["items"]
    heads = [f"{name} ({n[key]})" for name, key in (("whole", "whole"), ("core", "core"),
                                                        ("frozen core", "frozen_core"))]
    lines = [f"{'run':<24} {'model':<18} {heads[0]:>22} {heads[1]:>22} {heads[2]:>22}"]
    for r in body["rows"]:
        lines.append(f"{r['run'][-24:]:<24} {str(r['model'])[:18]:<18} {cell(r['whole'])} {cell(r['core'])} "
                     f"{cell(r['frozen_core'])}")
    for key, name in (("domains", domain_name), ("tracks", str)):
        heading = "  ".join(f"{m + ' micro/macro':>26}" for m in METRICS)
        lines += ["", f"{key[:-1]:<30} {'items':>5}  {heading}"]
        for group in _ordered(body[key], key):
            c = body[key][group]
            parts = [f"{_pct(c[m]['micro']).strip():>12} / {_pct({'rate': c[m]['macro']}).strip():<11}"
                     for m in METRICS]
            lines.append(f"{name(group):<30} {c['items']:>5}  " + "  ".join(f"{p:>26}" for p in parts))
    return "\n".join(lines)


__all__ = ["CRITERION_TYPES", "METRICS", "UNLABELLED", "answer_facts", "by_kind", "criterion_decomposition",
           "item_facts", "leaderboard", "read_item_facts", "render_leaderboard", "render_run_tables",
           "run_tables", "two_by_two", "wrong_paper_vs_must_ground"]
