"""The rubric rules: what a checklist must be before it can be frozen.

A rubric is 5–8 criteria ``{type, weight, text}``: type ``must_mention`` |
``must_acknowledge`` | ``must_ground`` | ``must_avoid``, an integer weight 1–3 and a text
that is not vague. At least one ``must_acknowledge`` and one ``must_avoid``; no two texts
the same (case and spacing ignored); no text holding a vague phrase of the configured list
(whole words, case ignored); and a judge finds each criterion binary-checkable and specific
to its question. :func:`rubric_problems` lists every broken rule (empty: valid), which is
also the feedback a redraft gets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ...datasets.tasks import CRITERION_TYPES

MIN_CRITERIA = 5
MAX_CRITERIA = 8
REDRAFTS = 3
VAGUE_PHRASES = ("adequately", "appropriately", "comprehensive", "comprehensively", "discusses", "in depth",
                 "relevant information", "thoroughly", "well-written")
"""The default list of phrases that make a criterion uncheckable (``--vague-phrase`` replaces it)."""


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def rubric_problems(criteria: Sequence[dict[str, Any]], vague_phrases: Sequence[str] = VAGUE_PHRASES, *,
                    min_criteria: int = MIN_CRITERIA, max_criteria: int = MAX_CRITERIA) -> list[str]:
    """Every rule ``criteria`` (drafted ``{type, weight, text}`` dicts) breaks, in a stable order."""
    problems: list[str] = []
    if not min_criteria <= len(criteria) <= max_criteria:
        problems.append(f"{len(criteria)} criteria; write {min_criteria} to {max_criteria}")
    types = [c.get("type") for c in criteria]
    for i, c in enumerate(criteria, 1):
        if c.get("type") not in CRITERION_TYPES:
            problems.append(f"criterion {i}: type {c.get('type')!r} is not one of "
                            f"{', '.join(CRITERION_TYPES)}")
        weight = c.get("weight")
        if not (isinstance(weight, int) and not isinstance(weight, bool) and 1 <= weight <= 3):
            problems.append(f"criterion {i}: weight {weight!r} is not an integer 1 to 3")
        text = c.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"criterion {i}: empty text")
            continue
        for phrase in vague_phrases:
            if re.search(rf"(?<!\w){re.escape(phrase.casefold())}(?!\w)", text.casefold()):
                problems.append(f"criterion {i}: vague phrase {phrase!r}")
    for needed in ("must_acknowledge", "must_avoid"):
        if needed not in types:
            problems.append(f"no {needed} criterion")
    seen: dict[str, int] = {}
    for i, c in enumerate(criteria, 1):
        if isinstance(c.get("text"), str) and c["text"].strip():
            first = seen.setdefault(_norm(c["text"]), i)
            if first != i:
                problems.append(f"criterion {i}: same text as criterion {first}")
    return problems


def specificity_problems(checks: Sequence[dict[str, Any]]) -> list[str]:
    """The judge's findings (``{id, binary, specific}`` per criterion) as problems."""
    problems = []
    for c in checks:
        if not c["binary"]:
            problems.append(f"criterion {c['id']}: not checkable with yes or no")
        if not c["specific"]:
            problems.append(f"criterion {c['id']}: not specific to this question")
    return problems


__all__ = ["MAX_CRITERIA", "MIN_CRITERIA", "REDRAFTS", "VAGUE_PHRASES", "rubric_problems",
           "specificity_problems"]
