"""The text stages: ``extract`` (open questions per source), ``refine`` (self-contained
question, taxonomy, hints, initial status) and ``audit`` (self-containment, Wilson intervals).

``extract`` rows: ``task_id = source_id#k`` (k from 0 in the extractor's order) with the
source's fields; a source whose reply is unparseable, lists a question twice or lists none is
dropped with the reason. ``refine`` adds ``question`` (the self-contained text),
``taxonomy`` (one class of the configured taxonomy), ``difficulty_hints`` (three),
``tool_hints``, ``initial_status`` and ``status_reasoning``; the status is an initial view,
never the final label (the openness stage decides that from evidence). ``audit`` judges a
seeded sample (yes/no) and writes ``audit.json``: the rate with its Wilson 95 % interval,
overall and per track, and with ``baseline: extracted`` the raw extracted text's rate and the
lift in percentage points.
"""

from __future__ import annotations

import random
from typing import Any

from ...stats import wilson_interval
from ..stages import Keep, Outcome, Reject, StageContext
from . import prompts
from .calls import ask
from .replies import ExtractReply, RefineReply, UnparseableReply, YesNoReply
from .sources import read_sources


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def extract(ctx: StageContext) -> None:
    sources = read_sources(ctx.stage.inputs[0], tuple(ctx.settings["tracks"]))

    def process(source: dict[str, Any]) -> Outcome:
        try:
            reply = ask(ctx, "writer", prompts.extract(source), ExtractReply,
                        f"extract {source['source_id']}")
        except UnparseableReply as e:
            return Reject("unparseable", f"extractor reply: {e}")
        seen: dict[str, int] = {}
        for k, q in enumerate(reply.questions):
            first = seen.setdefault(_norm(q), k)
            if first != k:
                return Reject("unparseable", f"extractor reply lists question {first} twice (as {k})")
        if not reply.questions:
            return Reject("no_open_questions", "the extractor found no open question in the source")
        return Keep({"questions": list(reply.questions), "source": source})

    kept = ctx.map([s.as_row() for s in sources], lambda s: s["source_id"], process)
    rows = []
    for entry in kept:
        source = entry["source"]
        for k, question in enumerate(entry["questions"]):
            rows.append({"extracted_question": question, "id_kind": source["id_kind"],
                         "source_id": source["source_id"], "source_text": source["text"],
                         "task_id": f"{source['source_id']}#{k}", "title": source["title"],
                         "track": source["track"], "url": source["url"], "year": source["year"]})
    ctx.write_jsonl("extracted.jsonl", rows)


def refine(ctx: StageContext) -> None:
    taxonomy = list(ctx.settings["taxonomy"])

    def process(item: dict[str, Any]) -> Outcome:
        try:
            reply = ask(ctx, "writer", prompts.refine(item, taxonomy), RefineReply,
                        f"refine {item['task_id']}")
        except UnparseableReply as e:
            return Reject("unparseable", f"refiner reply: {e}")
        if reply.taxonomy not in taxonomy:
            return Reject("unparseable", f"refiner reply: taxonomy label {reply.taxonomy!r} is not a "
                                         "class of the taxonomy")
        return Keep({**item, "difficulty_hints": list(reply.difficulty_hints),
                     "initial_status": reply.initial_status, "question": reply.self_contained_question,
                     "status_reasoning": reply.status_reasoning, "taxonomy": reply.taxonomy,
                     "tool_hints": list(reply.tool_hints)})

    items = ctx.read_jsonl("extracted.jsonl")
    ctx.write_jsonl("refined.jsonl", ctx.map(items, lambda i: i["task_id"], process))


def audit_sample(n: int, size: int, seed: int) -> list[int]:
    """The audited positions: all ``n`` when ``size >= n``, else a seeded sample, sorted."""
    if size >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), size))


def rate(yes: int, n: int) -> dict[str, Any]:
    """A share with its Wilson 95 % interval (percentages rounded to 0.1 for reading)."""
    low, high = wilson_interval(yes, n)
    return {"ci95": [low, high], "ci95_pct": [round(100 * low, 1), round(100 * high, 1)], "n": n,
            "rate": yes / n if n else 0.0, "rate_pct": round(100 * yes / n, 1) if n else 0.0, "yes": yes}


def audit_report(verdicts: list[dict[str, Any]], tracks: list[str], baseline: str | None) -> dict[str, Any]:
    """``audit.json`` from the kept per-item verdicts (``refined``/``extracted``: yes or no)."""
    def summary(rows: list[dict[str, Any]], field: str) -> dict[str, Any]:
        overall = rate(sum(r[field] == "yes" for r in rows), len(rows))
        per_track = [{**rate(sum(r[field] == "yes" for r in rows if r["track"] == t),
                              sum(r["track"] == t for r in rows)), "track": t} for t in tracks]
        return {**overall, "per_track": per_track}

    refined = summary(verdicts, "refined")
    extracted = summary(verdicts, "extracted") if baseline == "extracted" else None
    lift = round(refined["rate_pct"] - extracted["rate_pct"], 1) if extracted is not None else None
    return {"baseline": baseline, "extracted": extracted, "items": verdicts, "lift_pp": lift,
            "refined": refined}


def audit(ctx: StageContext) -> None:
    items = ctx.read_jsonl("refined.jsonl")
    size, seed = int(ctx.settings["sample"]), int(ctx.settings["sample_seed"])
    baseline = ctx.settings["baseline"]
    sample = [items[i] for i in audit_sample(len(items), size, seed)]

    def judged(text: str, what: str) -> str:
        return ask(ctx, "judge", prompts.self_containment(text), YesNoReply, what).self_contained

    def process(item: dict[str, Any]) -> Outcome:
        try:
            refined = judged(item["question"], f"self-containment of {item['task_id']}")
            extracted = None
            if baseline == "extracted":
                extracted = judged(item["extracted_question"],
                                   f"self-containment of {item['task_id']} as extracted")
        except UnparseableReply as e:
            return Reject("unparseable", f"self-containment judge reply: {e}")
        return Keep({"extracted": extracted, "refined": refined, "task_id": item["task_id"],
                     "track": item["track"]})

    verdicts = ctx.map(sample, lambda i: i["task_id"], process)
    report = audit_report(verdicts, list(ctx.settings["tracks"]), baseline)
    report["sample"] = {"audited": len(verdicts), "population": len(items), "seed": seed, "size": size,
                        "drawn": len(sample)}
    ctx.write_json("audit.json", report)


__all__ = ["audit", "audit_report", "audit_sample", "extract", "rate", "refine"]
