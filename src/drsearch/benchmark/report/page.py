"""The report's one HTML page: summary, groups, plots, comparisons, the per-question table and
the trajectory view, with its style, script, plots and data inline (it opens from disk and asks
for nothing over the network). No clock is read: the same runs give the same bytes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from .assets import CSS, JS
from .load import STATUS_LABELS, Run
from .svg import accuracy_plot, colour, grid_plot, histogram
from .tables import GROUP_FIELDS, comparisons, grid, groups, totals

TABLE_COLUMNS = (("run", "run", False), ("index", "#", True), ("qid", "question id", False),
                 ("status", "status", False), ("outcome", "verdict", False),
                 ("final_answer", "answer", False), ("gold", "gold", False),
                 ("tool_calls", "tool calls", True), ("total_tokens", "tokens", True),
                 ("leak_turn", "gold seen at turn", True))
"""The per-question table's columns: (row key, header, numeric)."""

_EPISODE_KEYS = ("run", "index", "qid", "question", "status", "outcome", "correct", "final_answer", "gold",
                 "tool_calls", "total_tokens", "leak_turn", "leak_tool", "leak_docid", "judge_reason")


def _num(value: Any, digits: int = 0) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and digits:
        return f"{value:,.{digits}f}"
    return f"{round(value):,}" if isinstance(value, float) else f"{value:,}"


def _rate(p: dict[str, Any]) -> str:
    if p["rate"] is None:
        return "—"
    correct = p["correct"] if "correct" in p else p["count"]  # scoring's proportions say count
    score = f"; mean checklist score {p['mean_score']:.3f}" if "mean_score" in p else ""
    return f"{p['rate']:.3f} [{p['ci'][0]:.3f}, {p['ci'][1]:.3f}] ({correct}/{p['n']}){score}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1, attrs: str = "") -> str:
    h = "".join(f"<th>{escape(c)}</th>" for c in head)
    b = "".join("<tr>" + "".join(f'<td{" class=n" if j >= numeric_from else ""}>{escape(c)}</td>'
                                 for j, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table{attrs}><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def _runs_section(runs: Sequence[Run]) -> str:
    rows = []
    for i, r in enumerate(runs):
        grading = r.scores.get("grading") or {}
        rows.append([r.label, str(r.manifest.get("model") or "—"), str(grading.get("dataset") or "—"),
                     str(grading.get("questions") or "—"), str(grading.get("judge_model") or "—"),
                     str(len(r.episodes)), colour(i)])
    body = "".join(f'<tr><td><span style="color:{c}">■</span> {escape(a)}</td>' +
                   "".join(f"<td>{escape(x)}</td>" for x in rest) + "</tr>" for a, *rest, c in rows)
    head = "".join(f"<th>{h}</th>" for h in ("run", "model", "dataset", "questions", "judge", "episodes"))
    return f"<h2>Runs</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _summary_section(runs: Sequence[Run]) -> str:
    t = [totals(r) for r in runs]
    lines: list[tuple[str, list[str]]] = [
        ("accuracy (Wilson 95%)", [_rate(x["accuracy"]) for x in t]),
        *((f"status: {s}", [str(x["status"].get(s, 0)) for x in t]) for s in STATUS_LABELS),
        ("tool calls (total)", [_num(x["tool_calls"]) for x in t]),
        ("tool calls per episode", [_num(x["tool_calls_mean"], 2) for x in t]),
        ("prompt tokens", [_num(x["prompt_tokens"]) for x in t]),
        ("completion tokens", [_num(x["completion_tokens"]) for x in t]),
        ("tokens per episode", [_num(x["tokens_mean"], 1) for x in t]),
        ("time (s, episodes summed)", [_num(x["wall_s"], 2) for x in t]),
        ("cost", [_num(x["cost"], 4) for x in t]),
        ("episodes that read the gold", [str(x["with_leak"]) for x in t]),
    ]
    return "<h2>Summary</h2>" + _table(["", *(r.label for r in runs)], [[k, *v] for k, v in lines],
                                        attrs=' id="summary"')


def _groups_section(runs: Sequence[Run]) -> str:
    parts = []
    for key, title in GROUP_FIELDS:
        series = {r.label: groups(r.episodes, key) for r in runs}
        if not any(series.values()):
            continue
        names: list[str] = []
        for g in series.values():
            names += [k for k in g if k not in names]
        rows = [[name, *(_rate(series[r.label][name]) if name in series[r.label] else "—" for r in runs)]
                for name in names]
        parts.append(f'<h3>Accuracy by {escape(title)}</h3><div class="plots">'
                     + accuracy_plot(f"accuracy by {title} (Wilson 95%)", series) + "</div>"
                     + _table([title, *(r.label for r in runs)], rows))
    return "<h2>Accuracy by group</h2>" + ("".join(parts) or "<p class=muted>The questions carry no "
                                           "tier, domain, bucket, difficulty or CCI.</p>")


def _grid_section(runs: Sequence[Run]) -> str:
    plots = [grid_plot(f"{r.label}: accuracy by E × P (DrBencher)", cells)
             for r in runs if (cells := grid(r.episodes))]
    return "<h3>DrBencher: E × P grid</h3><div class=plots>" + "".join(plots) + "</div>" if plots else ""


def _distributions_section(runs: Sequence[Run]) -> str:
    ran = {r.label: [e for e in r.episodes if e["status"] != "no episode"] for r in runs}
    calls = histogram("tool calls per episode", {k: [e["tool_calls"] for e in v] for k, v in ran.items()},
                      "tool calls")
    tokens = histogram("tokens per episode", {k: [e["total_tokens"] for e in v] for k, v in ran.items()},
                       "tokens")
    return f"<h2>Distributions</h2><div class=plots>{calls}{tokens}</div>"


def _comparison_section(runs: Sequence[Run]) -> str:
    if len(runs) < 2:
        return ""
    parts = ["<h2>Paired comparison (exact McNemar)</h2>"]
    for c in comparisons(runs):
        t, flips = c["table"], c["flips"]
        a, b = escape(c["a"]), escape(c["b"])
        diff = "—" if c["difference"] is None else f"{c['difference']:+.3f}"
        parts.append(
            f"<h3>{a} (A) vs {b} (B)</h3><p>paired questions {c['n_paired']}; accuracy A "
            f"{_rate(c['accuracy_a'])}, B {_rate(c['accuracy_b'])}; difference B−A {diff}; "
            f"exact McNemar p = {c['mcnemar_p']:.4g}</p>"
            + _table(["", "B correct", "B wrong"], [["A correct", str(t["both_correct"]), str(t["a_only"])],
                                                    ["A wrong", str(t["b_only"]), str(t["both_incorrect"])]],
                     attrs=' class="mcnemar"'))
        for name, ids in (("correct → incorrect", flips["correct_to_incorrect"]),
                          ("incorrect → correct", flips["incorrect_to_correct"])):
            parts.append(f"<p><b>{name} ({len(ids)}):</b> {escape(' '.join(ids)) if ids else '—'}</p>")
    return "".join(parts)


def _question_section(runs: Sequence[Run]) -> str:
    statuses = sorted({e["status"] for r in runs for e in r.episodes})
    outcomes = sorted({e["outcome"] for r in runs for e in r.episodes})

    def select(ident: str, label: str, values: Sequence[str]) -> str:
        opts = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
        return f'<label>{label} <select id="{ident}"><option value="">all</option>{opts}</select></label>'

    run_filter = select("f-run", "run", [r.label for r in runs]) if len(runs) > 1 else ""
    head = "".join(f'<th data-key="{k}">{escape(h)}</th>' for k, h, _ in TABLE_COLUMNS
                   if k != "run" or len(runs) > 1)
    return ("<h2>Questions</h2><p class=muted>Click a header to sort, a row to open its trajectory.</p>"
            '<div class="controls"><label>filter <input id="f-text" type="search" '
            'placeholder="question, answer, gold, id"></label>'
            + select("f-status", "status", statuses) + select("f-verdict", "verdict", outcomes) + run_filter
            + '<span id="shown" class="muted"></span></div>'
            + '<section id="trajectory" hidden></section>'
            + f'<table id="questions"><thead><tr>{head}</tr></thead><tbody></tbody></table>')


def _data(runs: Sequence[Run]) -> str:
    episodes, trajectories = [], []
    for r in runs:
        for e in r.episodes:
            episodes.append({k: e[k] for k in _EPISODE_KEYS})
            trajectories.append(r.trajectories.get(e["qid"], []))
    columns = [{"key": k, "num": num} for k, _, num in TABLE_COLUMNS if k != "run" or len(runs) > 1]
    text = json.dumps({"columns": columns, "episodes": episodes, "trajectories": trajectories},
                      sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")  # inert in <script>


def render(runs: Sequence[Run]) -> str:
    """The whole page for ``runs`` (one or more, in the order given)."""
    title = "drsearch report: " + ", ".join(r.label for r in runs)
    body = (f"<h1>{escape(title)}</h1>" + _runs_section(runs) + _summary_section(runs)
            + _groups_section(runs) + _grid_section(runs) + _distributions_section(runs)
            + _comparison_section(runs) + _question_section(runs))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{body}"
            "<noscript><p>The per-question table and the trajectories need JavaScript; the CSV and "
            "Parquet files beside this page hold the same rows.</p></noscript>"
            f'<script type="application/json" id="report-data">{_data(runs)}</script>'
            f"<script>{JS}</script></body></html>\n")


__all__ = ["TABLE_COLUMNS", "render"]
