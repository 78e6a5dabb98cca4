"""Behaviour metrics of a run (``scores.json`` ``behaviour``): how the agent answered, not whether
it was right.

Over the questions of the questions file (first attempt), each rate with its Wilson 95 %
interval:

- ``non_attempt``: no usable answer (no episode, an unfinished or failed episode, an empty
  final answer);
- ``zero_tool``: an answer given without a single tool call;
- ``cite``: an answer citing at least one identifier (``citations.extract_citations``: PMID,
  NCT, arXiv id, DOI, docid or URL);
- ``wrong_paper`` per identifier kind (``pmid``, ``nct``, ``arxiv``), for items whose id names
  their source (OpenBioRQ ``task_id = source_id#k``): of the answers that cite identifiers of
  the source's kind, those that never cite the source's own one. Source ids are normalised as
  extraction normalises citations (``arXiv:2101.01234v2`` is ``2101.01234``, so a citation of
  ``arxiv.org/abs/2101.01234`` is the right paper).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .citations import arxiv_id, extract_citations
from .grade import FINISHED
from .stats import wilson_interval

_SOURCE_KINDS = (("PMID:", "pmid"), ("NCT", "nct"), ("arXiv:", "arxiv"))


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
            "non_attempt": _rate(n - len(answered), n), "wrong_paper": wrong,
            "zero_tool": _rate(zero_tool, len(answered))}


__all__ = ["behaviour_metrics"]
