"""Behaviour metrics of a run (``scores.json`` ``behaviour``): how the agent answered, not whether
it was right.

Over the questions of the questions file (first attempt), each rate with its Wilson 95 %
interval:

- ``non_attempt``: no usable answer (no episode, an unfinished or failed episode, an empty
  final answer) or a written refusal (the paper's declining), split as ``no_answer`` and
  ``refusal``. A written refusal (:func:`is_refusal`) is an answer of at most
  :data:`REFUSAL_MAX_CHARS` characters that cites no identifier and has a sentence opening
  with one of :data:`REFUSAL_OPENINGS` (case and spacing ignored): a short, unsourced "I cannot
  answer this" declines, while a long or sourced answer that admits uncertainty is an attempt;
- ``zero_tool``: an answer given without a single tool call (over the answers given, refusals
  included: a refusal without a tool call is the paper's collapse);
- ``cite``: an answer citing at least one identifier (``citations.extract_citations``: PMID,
  NCT, arXiv id, DOI, docid or URL);
- ``source_not_cited`` per identifier kind (``pmid``, ``nct``, ``arxiv``), for items whose id
  names their source (OpenBioRQ ``task_id = source_id#k``): of the answers that cite
  identifiers of the source's kind, those that never cite the source's own one. It was called
  ``wrong_paper`` before; it is not the paper's wrong-paper rate (a cited record that does not
  support its claim, judged at L2: ``citations.wrong_paper`` and the ``openbiorq`` tables), and
  :func:`read_behaviour` reads a ``scores.json`` written under the old name. Source ids are normalised as
  extraction normalises citations (``arXiv:2101.01234v2`` is ``2101.01234``, so a citation of
  ``arxiv.org/abs/2101.01234`` is the right paper).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .citations import arxiv_id, extract_citations
from .grade import FINISHED
from .stats import wilson_interval

_SOURCE_KINDS = (("PMID:", "pmid"), ("NCT", "nct"), ("arXiv:", "arxiv"))
REFUSAL_MAX_CHARS = 400
REFUSAL_OPENINGS = ("i cannot", "i can't", "i can not", "i am unable", "i'm unable", "i am not able",
                    "i'm not able", "i decline", "i must decline", "i won't", "i will not",
                    "unable to answer",
                    "cannot answer", "i do not have enough", "i don't have enough", "there is insufficient",
                    "there is not enough", "no answer can be given")
"""Sentence openings of a written refusal (lower case; straight apostrophes: curly ones are folded)."""
_SENTENCE = re.compile(r"(?:^|[.!?]\s+|\n)\s*")


def is_refusal(answer: str) -> bool:
    """True for a written refusal: at most REFUSAL_MAX_CHARS characters, no cited identifier, and a
    sentence opening with one of REFUSAL_OPENINGS (case and whitespace ignored)."""
    text = " ".join(answer.replace("\u2019", "'").split()).casefold()
    if not text or len(text) > REFUSAL_MAX_CHARS or extract_citations(answer):
        return False
    starts = [m.end() for m in _SENTENCE.finditer(text)]
    return any(text.startswith(opening, i) for i in starts for opening in REFUSAL_OPENINGS)


def read_behaviour(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``behaviour`` block of a scores.json, with the pre-rename ``wrong_paper`` key read as
    ``source_not_cited`` (``renamed_from`` records it); None when the file has none."""
    block = summary.get("behaviour")
    if not isinstance(block, dict):
        return None
    if "wrong_paper" in block and "source_not_cited" not in block:
        rest = {k: v for k, v in block.items() if k != "wrong_paper"}
        return {**rest, "renamed_from": {"source_not_cited": "wrong_paper"},
                "source_not_cited": block["wrong_paper"]}
    return dict(block)


def _rate(count: int, n: int) -> dict[str, Any]:
    return {"ci95": list(wilson_interval(count, n)), "count": count, "n": n, "rate": count / n if n else 0.0}


def _source(question_id: str) -> tuple[str, str] | None:
    """``(kind, value)`` of the source an OpenBioRQ task id names, as citations normalise it."""
    source = question_id.rsplit("#", 1)[0] if "#" in question_id else ""
    for prefix, kind in _SOURCE_KINDS:
        if source.startswith(prefix):
            if kind == "arxiv":
                value = arxiv_id(source.removeprefix(prefix))
                return None if value is None else (kind, value)
            return kind, source.removeprefix("PMID:") if kind == "pmid" else source.upper()
    return None


def behaviour_metrics(episodes: Mapping[str, dict[str, Any]], question_ids: Sequence[str]) -> dict[str, Any]:
    """The metrics over ``question_ids`` (``episodes``: a run's trajectories by question id)."""
    answered: list[tuple[str, dict[str, Any]]] = []
    for qid in question_ids:
        e = episodes.get(qid)
        answer = e.get("final_answer") if e is not None else None
        if e is not None and e.get("status") in FINISHED and isinstance(answer, str) and answer.strip():
            answered.append((qid, e))
    refusals = sum(1 for _, e in answered if is_refusal(e["final_answer"]))
    zero_tool = sum(1 for _, e in answered if not e.get("tool_calls")
                    and not sum((e.get("accounting") or {}).get("tool_calls", {}).values()))
    cited = {qid: extract_citations(e["final_answer"]) for qid, e in answered}
    wrong: dict[str, dict[str, Any]] = {}
    for _, kind in _SOURCE_KINDS:
        relevant = wrong_count = 0
        for qid, _e in answered:
            source = _source(qid)
            if source is None or source[0] != kind:
                continue
            values = {c.value for c in cited[qid] if c.kind == kind}
            if values:
                relevant += 1
                wrong_count += source[1] not in values
        wrong[kind] = _rate(wrong_count, relevant)
    n = len(question_ids)
    return {"cite": _rate(sum(1 for c in cited.values() if c), len(answered)),
            "non_attempt": {**_rate(n - len(answered) + refusals, n), "no_answer": n - len(answered),
                            "refusal": refusals},
            "source_not_cited": wrong, "zero_tool": _rate(zero_tool, len(answered))}


__all__ = ["REFUSAL_MAX_CHARS", "REFUSAL_OPENINGS", "behaviour_metrics", "is_refusal", "read_behaviour"]
