"""The ``rubric`` stage: a checklist of 5–8 criteria per question, validated, redrafted, hashed.

A draft is checked by the rules of :mod:`.rubric` (count, types, weights, acknowledge and
avoid present, no duplicate texts, no vague phrase), then by the judge (each criterion
binary-checkable and specific to its question). A draft that fails is sent back with every
problem listed, up to ``redrafts`` times (3); an item still failing is dropped as
``rubric_invalid`` with the last draft's problems. A writer reply that is not the JSON asked
for counts as a failed draft; a judge reply that is not is an ``unparseable`` drop. A kept
item carries ``checklist``, its ``rubric_sha256`` (``datasets.openbiorq.rubric_sha256``:
grading refuses the item once its checklist no longer has that hash) and
``rubric_drafts`` (the problems of each rejected draft, in order).
"""

from __future__ import annotations

from typing import Any

from ...datasets.openbiorq import rubric_sha256
from ..stages import Keep, Outcome, Reject, StageContext
from . import prompts
from .calls import ask
from .gold import reference_answers
from .replies import RubricReply, SpecificityReply, UnparseableReply
from .rubric import rubric_problems, specificity_problems


def rubric_stage(ctx: StageContext) -> None:
    redrafts = int(ctx.settings["redrafts"])
    references = reference_answers(ctx.read_jsonl("gold.jsonl"))  # empty unless the gold stage ran a model
    vague = tuple(ctx.settings["vague_phrases"])

    def process(item: dict[str, Any]) -> Outcome:
        history: list[list[str]] = []
        feedback: list[str] = []
        for draft in range(redrafts + 1):
            what = f"rubric {item['task_id']} draft {draft}"
            try:
                reply = ask(ctx, "writer", prompts.rubric(item, feedback, references.get(item["task_id"])),
                            RubricReply, what)
                criteria = [c.model_dump() for c in reply.criteria]
            except UnparseableReply as e:
                feedback = [f"the reply was not the JSON object asked for ({e})"]
                history.append(feedback)
                continue
            feedback = rubric_problems(criteria, vague, min_criteria=int(ctx.settings["min_criteria"]),
                                       max_criteria=int(ctx.settings["max_criteria"]))
            if not feedback:
                try:
                    checks = ask(ctx, "judge", prompts.specificity(item["question"], criteria),
                                 SpecificityReply, f"rubric check {item['task_id']} draft {draft}").criteria
                except UnparseableReply as e:
                    return Reject("unparseable", f"rubric judge reply: {e}")
                if sorted(c.id for c in checks) != list(range(1, len(criteria) + 1)):
                    return Reject("unparseable", f"rubric judge reply: ids {[c.id for c in checks]} are not "
                                                 f"1..{len(criteria)}")
                feedback = specificity_problems([c.model_dump() for c in sorted(checks, key=lambda c: c.id)])
            if not feedback:
                checklist = [{"text": c["text"], "type": c["type"], "weight": c["weight"]} for c in criteria]
                return Keep({**item, "checklist": checklist, "rubric_drafts": history,
                             "rubric_sha256": rubric_sha256(checklist)})
            history.append(feedback)
        return Reject("rubric_invalid", f"{redrafts} redraft(s) and still: {'; '.join(feedback)}")

    items = ctx.read_jsonl("deduped.jsonl")
    ctx.write_jsonl("rubrics.jsonl", ctx.map(items, lambda i: i["task_id"], process))


__all__ = ["rubric_stage"]
