"""The printed form of ``scores.json``'s ``drbencher`` block: the paper's Tables 2, 4 and 5,
the CCI trend and failure analysis stage 1, as fixed-width text (``drsearch score`` prints
it under the scores table). A pure function of the block, so the same scores print the same
bytes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .tables import FAILURE_BUCKETS

_BUCKET_NAMES = {"no_answer": "no answer", "no_number": "not one number",
                 "not_comparable": "not comparable", "within_2pct": "<= 2% (exact match)",
                 "2_to_50pct": "2-50%", "over_50pct": "> 50%"}


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(value: Any) -> str:
    return "-" if value is None else str(value)


def _pct(rate: Any) -> str:
    return "-" if rate is None else f"{100.0 * rate:.1f}"


def _grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r: Sequence[str]) -> str:  # the first column left-aligned, the numbers right-aligned
        cells = zip(r, widths, strict=True)
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(cells)).rstrip()
    return [line(header), *(line(r) for r in rows)]


def _benchmark(rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = ["Benchmark summary (Table 2)"]
    out += _grid(["domain", "n", "Tmpl", "Top", "Art", "E", "P", "CCI", "C/Q", "H/C", "H/Q"],
                 [[d, str(r["questions"]), str(r["templates"]), _count(r["topics"]),
                   str(r["articles"]), _num(r["E"]), _num(r["P"]), _num(r["CCI"]),
                   _num(r["chains_per_question"]), _num(r["hops_per_chain"]), _num(r["hops_per_question"])]
                  for d, r in rows.items()])
    return out


def _domains(rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = ["Entity identification (Ent) and answer accuracy (Ans), % of attempts (Table 4)"]
    out += _grid(["domain", "questions", "attempts", "Ent %", "Ans %"],
                 [[d, str(r["questions"]), str(r["attempts"]), _pct(r["entity"]["rate"]),
                   _pct(r["answer"]["rate"])] for d, r in rows.items()])
    return out


def _cell(cell: Mapping[str, Any] | None) -> str:
    return "-" if cell is None else f"{_pct(cell['accuracy'])} ({cell['attempts']})"


def _ep_grid(grid: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[str]:
    ps = sorted({p for cells in grid.values() for p in cells}, key=int)
    out = ["Accuracy % by entities E (rows) and property lookups P (columns), attempts in () (Table 5)"]
    out += _grid(["E \\ P", *ps],
                 [[e, *(_cell(grid[e].get(p)) for p in ps)] for e in sorted(grid, key=int)])
    return out


def _trend(trend: Mapping[str, Any]) -> list[str]:
    s, jt = trend["spearman"], trend["jonckheere_terpstra"]
    sp = s["error"] if "error" in s else f"rho = {s['rho']:.4f}, p = {s['p']:.4g} (two-sided)"
    j = jt["error"] if "error" in jt else (f"J = {jt['J']:g}, z = {jt['z']:.4f}, one-sided p (decreasing) = "
                                            f"{jt['p_decreasing']:.4g} ({jt['method']})")
    return [f"CCI trend over {trend['n']} questions (CCI levels {', '.join(map(str, trend['levels']))})",
            f"  Spearman: {sp}", f"  Jonckheere-Terpstra: {j}"]


def _failures(failures: Mapping[str, Any]) -> list[str]:
    b = failures["buckets"]
    out = [f"Failure analysis stage 1: {failures['failures']} incorrect attempts by relative error "
           "and entity identification"]
    out += _grid(["relative error", "entity identified", "not identified", "total"],
                 [[_BUCKET_NAMES[k], str(b[k]["identified"]), str(b[k]["not_identified"]), str(b[k]["total"])]
                  for k in FAILURE_BUCKETS])
    return out


def render_drbencher(block: Mapping[str, Any]) -> str:
    """The tables of a ``drbencher`` block (:func:`.scoring.drbencher_summary`), blank-line separated."""
    parts = [_benchmark(block["benchmark"]), _domains(block["by_domain"]), _ep_grid(block["grid"]),
             _trend(block["cci_trend"]), _failures(block["failures"])]
    return "\n\n".join("\n".join(p) for p in parts)


__all__ = ["render_drbencher"]
