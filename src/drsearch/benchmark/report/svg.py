"""Inline SVG plots for the report: accuracy with Wilson intervals per group, histograms, the
E × P grid. Plain strings, fixed sizes and two-decimal coordinates, so the same numbers give the
same bytes; no script, no external font or style."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
"""One colour per run, in the order the runs were given (cycled past eight)."""


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _f(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{_f(width)}" height="{_f(height)}" '
            f'viewBox="0 0 {_f(width)} {_f(height)}" role="img" aria-label="{escape(title)}">'
            f'<title>{escape(title)}</title>' + "".join(body) + "</svg>")


def _text(x: float, y: float, s: str, anchor: str = "start", size: int = 11, extra: str = "") -> str:
    return (f'<text x="{_f(x)}" y="{_f(y)}" font-size="{size}" text-anchor="{anchor}"{extra}>'
            f"{escape(s)}</text>")


def _legend(labels: Sequence[str], x: float, y: float) -> list[str]:
    out = []
    for i, label in enumerate(labels):
        yy = y + 14 * i
        out.append(f'<rect x="{_f(x)}" y="{_f(yy - 8)}" width="10" height="10" fill="{colour(i)}"/>')
        out.append(_text(x + 14, yy + 1, label, size=10))
    return out


def accuracy_plot(title: str, series: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """Accuracy (dot) and its interval (whisker) per group, one colour per run.

    ``series``: run label -> group -> ``{rate, ci, correct, n}``; groups in first-seen order."""
    keys: list[str] = []
    for groups in series.values():
        keys += [k for k in groups if k not in keys]
    runs = list(series)
    band = max(18, 12 * len(runs) + 6)
    left, width, top = 150.0, 360.0, 24.0
    height = top + band * len(keys) + 30 + 14 * (len(runs) if len(runs) > 1 else 0)
    body = [_text(4, 14, title, size=12, extra=' font-weight="bold"')]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + width * tick
        body.append(f'<line x1="{_f(x)}" y1="{_f(top)}" x2="{_f(x)}" y2="{_f(top + band * len(keys))}" '
                    'stroke="#ddd"/>')
        body.append(_text(x, top + band * len(keys) + 12, f"{tick:.2f}", "middle", 10))
    for row, key in enumerate(keys):
        y0 = top + band * row
        body.append(_text(left - 6, y0 + band / 2 + 4, key[:24], "end", 11))
        for i, run in enumerate(runs):
            p = series[run].get(key)
            if p is None or p["rate"] is None:
                continue
            y = y0 + 9 + 12 * i
            lo, hi = (left + width * c for c in p["ci"])
            x = left + width * p["rate"]
            c = colour(i)
            tip = (f"{run}: {key} {p['correct']}/{p['n']} = {p['rate']:.3f} "
                   f"[{p['ci'][0]:.3f}, {p['ci'][1]:.3f}]")
            body.append(f'<g><title>{escape(tip)}</title>'
                        f'<line x1="{_f(lo)}" y1="{_f(y)}" x2="{_f(hi)}" y2="{_f(y)}" stroke="{c}" '
                        'stroke-width="2"/>'
                        f'<circle cx="{_f(x)}" cy="{_f(y)}" r="4" fill="{c}"/></g>')
            body.append(_text(left + width + 6, y + 4, f"{p['correct']}/{p['n']}", size=10))
    if len(runs) > 1:
        body += _legend(runs, left, top + band * len(keys) + 28)
    return _svg(left + width + 60, height, body, title)


def _bins(values: Sequence[float]) -> list[float]:
    """Bin edges: one per integer for small integer ranges, else 12 equal bins."""
    lo, hi = min(values), max(values)
    if all(float(v).is_integer() for v in values) and hi - lo <= 24:
        return [lo - 0.5 + i for i in range(int(hi - lo) + 2)]
    if hi == lo:
        return [lo - 0.5, lo + 0.5]
    step = (hi - lo) / 12
    return [lo + step * i for i in range(13)]


def histogram(title: str, values: Mapping[str, Sequence[float]], unit: str) -> str:
    """Counts per bin of ``values`` (run label -> one value per episode), bars side by side."""
    runs = [r for r in values if values[r]]
    every = [float(v) for r in runs for v in values[r]]
    left, width, top, plot_h = 40.0, 420.0, 24.0, 120.0
    body = [_text(4, 14, title, size=12, extra=' font-weight="bold"')]
    if not every:
        body.append(_text(left, top + 20, "no episodes"))
        return _svg(left + width + 20, top + 40, body, title)
    edges = _bins(every)
    integers = all(v.is_integer() for v in every) and edges[1] - edges[0] == 1
    nbins = len(edges) - 1
    counts = {r: [0] * nbins for r in runs}
    for r in runs:
        for v in values[r]:
            i = min(nbins - 1, max(0, math.floor((float(v) - edges[0]) / (edges[1] - edges[0]))))
            counts[r][i] += 1
    peak = max(max(c) for c in counts.values()) or 1
    slot = width / nbins
    bar = max(1.0, (slot - 2) / len(runs))
    for b in range(nbins):
        for i, r in enumerate(runs):
            h = plot_h * counts[r][b] / peak
            x = left + slot * b + 1 + bar * i
            tip = f"{r}: {counts[r][b]} episode(s) in [{edges[b]:.6g}, {edges[b + 1]:.6g}) {unit}"
            body.append(f'<rect x="{_f(x)}" y="{_f(top + plot_h - h)}" width="{_f(bar)}" height="{_f(h)}" '
                        f'fill="{colour(i)}"><title>{escape(tip)}</title></rect>')
    base = top + plot_h
    body.append(f'<line x1="{_f(left)}" y1="{_f(base)}" x2="{_f(left + width)}" y2="{_f(base)}" '
                'stroke="#888"/>')
    if integers:  # a bar per value: its value under its middle
        for b in sorted({0, nbins // 2, nbins - 1}):
            body.append(_text(left + slot * (b + 0.5), base + 12, f"{edges[b] + 0.5:.0f}", "middle", 10))
    else:
        for b in sorted({0, nbins // 2, nbins}):
            body.append(_text(left + slot * b, top + plot_h + 12, f"{edges[b]:.6g}", "middle", 10))
    body.append(_text(left + width, top + plot_h + 26, unit, "end", 10))
    body.append(_text(left - 4, top + 8, str(peak), "end", 10))
    if len(runs) > 1:
        body += _legend(runs, left, top + plot_h + 40)
    return _svg(left + width + 20, top + plot_h + 34 + (14 * len(runs) if len(runs) > 1 else 0), body, title)


def grid_plot(title: str, cells: Mapping[tuple[int, int], Mapping[str, Any]]) -> str:
    """DrBencher's E × P grid: a cell per (entities, properties), shaded by accuracy, ``k/n`` in it."""
    es = sorted({e for e, _ in cells})
    ps = sorted({p for _, p in cells})
    cell, left, top = 56.0, 60.0, 40.0
    body = [_text(4, 14, title, size=12, extra=' font-weight="bold"'),
            _text(left + cell * len(ps) / 2, top - 8, "P (properties)", "middle", 10)]
    for j, p in enumerate(ps):
        body.append(_text(left + cell * j + cell / 2, top + cell * len(es) + 14, str(p), "middle", 10))
    for i, e in enumerate(es):
        body.append(_text(left - 6, top + cell * i + cell / 2 + 4, f"E={e}", "end", 10))
        for j, p in enumerate(ps):
            c = cells.get((e, p))
            if c is None:
                continue
            rate = c["rate"] or 0.0
            shade = round(255 - 130 * rate)  # light enough for the black count on it
            x, y = left + cell * j, top + cell * i
            body.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(cell - 2)}" height="{_f(cell - 2)}" '
                        f'fill="rgb({shade},{shade},255)" stroke="#888">'
                        f'<title>E={e} P={p}: {c["correct"]}/{c["n"]} '
                        f'[{c["ci"][0]:.3f}, {c["ci"][1]:.3f}]</title></rect>')
            body.append(_text(x + cell / 2 - 1, y + cell / 2 + 4, f"{c['correct']}/{c['n']}", "middle", 11))
    width = max(left + cell * max(1, len(ps)) + 20, 7.0 * len(title) + 10)  # room for the title
    return _svg(width, top + cell * max(1, len(es)) + 24, body, title)


__all__ = ["PALETTE", "accuracy_plot", "colour", "grid_plot", "histogram"]
