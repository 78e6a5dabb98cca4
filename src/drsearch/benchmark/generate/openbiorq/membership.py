"""The ``membership`` stage: how much of each question is copied from its source text.

A question that repeats its source verbatim invites a memorised answer; one that paraphrases
does not. Per item, against its source's text (words: lower-cased ``\\w+`` runs): the longest
common verbatim word span (contiguous, in both), the token Jaccard of the two word sets, and
whether the longest span is at most ``max_span`` (5) words. ``membership.json`` has each item,
the medians and the share of items within ``max_span`` with its Wilson 95 % interval.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from ..stages import StageContext
from .textstages import rate

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def longest_common_span(a: list[str], b: list[str]) -> int:
    """Length of the longest run of words that occurs contiguously in both ``a`` and ``b``."""
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, 1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def jaccard(a: list[str], b: list[str]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 0.0


def membership_report(items: list[dict[str, Any]], max_span: int) -> dict[str, Any]:
    rows = []
    for item in items:
        q, src = words(item["question"]), words(item["source_text"])
        rows.append({"jaccard": round(jaccard(q, src), 6), "longest_span": longest_common_span(q, src),
                     "task_id": item["task_id"]})
    within = sum(r["longest_span"] <= max_span for r in rows)
    return {"items": rows, "max_span": max_span,
            "median_jaccard": round(statistics.median(r["jaccard"] for r in rows), 6) if rows else None,
            "median_span": statistics.median(r["longest_span"] for r in rows) if rows else None,
            "within_max_span": rate(within, len(rows))}


def membership_stage(ctx: StageContext) -> None:
    items = ctx.read_jsonl("rubrics.jsonl")
    ctx.count_in(len(items))
    ctx.count_out(len(items))
    ctx.write_json("membership.json", membership_report(items, int(ctx.settings["max_span"])))


__all__ = ["jaccard", "longest_common_span", "membership_report", "membership_stage", "words"]
