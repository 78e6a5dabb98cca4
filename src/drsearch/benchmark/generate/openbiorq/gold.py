"""The gold-answer slice (the paper's §4.2 and Appendix D): an optional stage in which a model
synthesizes a reference answer for each question, used only as context when the rubric is
drafted, and the audit of the citations those answers make.

- :func:`gold_stage` (stage ``gold``, after ``dedup``): with ``--gold-model M``, one call per item
  (``prompts.gold``), the answer and the identifiers it cites (``citations.extract_citations``)
  kept in ``gold.jsonl``; a reply off its schema leaves that item without a reference answer
  (``unparseable``, recorded), never drops it: the rubric stage reads ``deduped.jsonl``. Without
  a gold model the stage writes an empty ``gold.jsonl`` (0 in, 0 out) and the rubric prompts carry
  no reference answer, byte for byte as before.
- :func:`gold_audit`: every citation of the gold answers resolved (L1) and judged for support
  (L2) by a :class:`~drsearch.benchmark.citations.CitationAuditor`; the rates of
  ``citations.citation_rates`` (existence, and ``wrong_paper``: the paper's gold misattribution)
  plus how many answers cite anything. It is kept apart from the agents' citation audit, and gold
  citations are never a target (the paper's reason: ~74 % of them are misattributions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...citations import CitationAuditor, citation_rates, extract_citations
from ..stages import Keep, Outcome, Reject, StageContext
from . import prompts
from .calls import ask
from .replies import GoldReply, UnparseableReply


def gold_stage(ctx: StageContext) -> None:
    if ctx.settings.get("gold_model") is None:
        ctx.write_jsonl("gold.jsonl", [])
        return

    def process(item: dict[str, Any]) -> Outcome:
        try:
            reply = ask(ctx, "gold", prompts.gold(item), GoldReply, f"reference answer of {item['task_id']}")
        except UnparseableReply as e:
            return Reject("unparseable", f"gold reply: {e} (the item goes on without a reference answer)")
        cited = [{"kind": c.kind, "value": c.value} for c in extract_citations(reply.answer)]
        return Keep({"answer": reply.answer, "citations": cited, "task_id": item["task_id"]})

    items = ctx.read_jsonl("deduped.jsonl")
    ctx.write_jsonl("gold.jsonl", ctx.map(items, lambda i: i["task_id"], process))


def reference_answers(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{task_id: answer}`` of ``gold.jsonl``'s rows (what the rubric stage drafts with)."""
    return {str(r["task_id"]): str(r["answer"]) for r in rows}


def gold_audit(rows: Iterable[Mapping[str, Any]], auditor: CitationAuditor) -> dict[str, Any]:
    """The gold-citation audit of ``gold.jsonl``'s rows (module doc), per item and in total."""
    items = []
    for row in rows:
        checks = [c.as_dict() for c in auditor.audit(str(row["answer"]))]
        items.append({"checks": checks, "task_id": row["task_id"]})
    all_checks = [c for i in items for c in i["checks"]]
    return {"answers": len(items), "answers_citing": sum(1 for i in items if i["checks"]),
            "citations": citation_rates(all_checks), "items": items,
            "support_judge": auditor.support.describe() if auditor.support is not None else None}


__all__ = ["gold_audit", "gold_stage", "reference_answers"]
