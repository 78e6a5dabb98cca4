"""The ``openness`` stage: an evidence-grounded status for every item (and injected controls).

Stage 1 (:mod:`.evidence`) gathers each item's evidence bundle without an LLM; the bundle is
persisted in ``evidence.jsonl`` (ids, snippets, and the SHA-256 of every response). Stage 2:
the judge returns a status and the evidence ids it relies on. A verdict citing no id, or any id
outside the bundle, becomes ``unknown`` with the rejected ids recorded; a reply off its schema
drops the item as ``unparseable``. ``openness.jsonl`` carries the items with their
``openness`` block; ``openness.json`` counts the labels, how many changed from
``initial_status``, and with ``--inject-controls FILE`` the controls' recall (known-resolved
items labelled ``answered``) and the false-positive rate (genuinely open items labelled
``answered``). Controls are judged like items (counted in the stage's ``in``/``out``) and are
not emitted as items.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from ....agents.canonical import sha256_json
from ....contract import InvalidInputError
from ...datasets._jsonl import parse_row, read_objects
from ..stages import Keep, Outcome, Reject, StageContext
from . import prompts
from .calls import ask
from .evidence import Gatherer
from .replies import STATUSES, OpennessReply, UnparseableReply
from .sources import Source


def read_controls(path: str) -> list[dict[str, Any]]:
    """``--inject-controls`` rows: a source (``source_id``, ``track``, ``title``, ``text``) plus
    ``task_id``, ``question`` and ``expected`` (``resolved`` | ``open``); InvalidInputError names
    file:line."""
    rows = []
    for where, value in read_objects(path):
        source = parse_row(Source, value, where)
        expected, question, task_id = value.get("expected"), value.get("question"), value.get("task_id")
        if expected not in ("resolved", "open") or not isinstance(question, str) or not question.strip() \
                or not isinstance(task_id, str) or not task_id.startswith(f"{source.source_id}#"):
            raise InvalidInputError(f"{where}: a control needs expected (resolved or open), a question and "
                                    "a task_id source_id#k")
        rows.append({**source.as_row(), "expected": expected, "question": question, "task_id": task_id})
    return rows


def verdict(reply: OpennessReply, bundle: dict[str, Any]) -> dict[str, Any]:
    """The judge's reply grounded in ``bundle``: uncited or out-of-bundle verdicts are ``unknown``."""
    ids = {e["id"] for e in bundle["evidence"]}
    rejected = sorted({i for i in reply.evidence_ids if i not in ids})
    cited = [i for i in reply.evidence_ids if i in ids]
    label, why = reply.status, None
    if rejected:
        label, why = "unknown", f"cites {len(rejected)} id(s) outside the evidence bundle"
    elif not cited and reply.status != "unknown":
        label, why = "unknown", "cites no evidence"
    return {"evidence_ids": cited, "judge_status": reply.status, "label": label, "reasoning": reply.reasoning,
            "rejected_ids": rejected, "unknown_because": why}


def _s2_api_key(ctx: StageContext) -> str | None:
    """The Semantic Scholar key from the environment variable the settings name (a replay needs none)."""
    var = ctx.settings.get("s2_api_key_env")
    key = os.environ.get(var) if var else None
    if var and not key and ctx.cache.mode != "replay":
        raise InvalidInputError(f"--s2-api-key-env: environment variable {var} is not set")
    return key


def openness_stage(ctx: StageContext) -> None:
    routes = dict(ctx.settings["routes"])
    items = ctx.read_jsonl("rubrics.jsonl")
    controls = read_controls(ctx.settings["controls"]) if ctx.settings["controls"] else []
    gatherer = Gatherer(ctx, routes, int(ctx.settings["evidence_k"]), float(ctx.settings["min_interval_s"]),
                        max_attempts=int(ctx.settings["api_max_attempts"]),
                        backoff_s=float(ctx.settings["api_backoff_s"]),
                        s2_api_key=_s2_api_key(ctx))
    try:
        def process(item: dict[str, Any]) -> Outcome:
            bundle = {"task_id": item["task_id"], **gatherer.bundle(item)}
            try:
                reply = ask(ctx, "judge", prompts.openness(item, bundle["evidence"]), OpennessReply,
                            f"openness of {item['task_id']}")
            except UnparseableReply as e:
                return Reject("unparseable", f"openness judge reply: {e}")
            block = {**verdict(reply, bundle), "bundle_sha256": sha256_json(bundle),
                     "initial_status": item.get("initial_status")}
            return Keep({"bundle": bundle, "openness": block, "task_id": item["task_id"]})

        judged = ctx.map(items, lambda i: i["task_id"], process)
        judged_controls = ctx.map(controls, lambda c: f"control {c['task_id']}", process) if controls else []
    finally:
        gatherer.close()
    by_id = {j["task_id"]: j for j in judged}
    rows = [{**item, "openness": by_id[item["task_id"]]["openness"]}
            for item in items if item["task_id"] in by_id]
    ctx.write_jsonl("openness.jsonl", rows)
    ctx.write_jsonl("evidence.jsonl", [j["bundle"] for j in judged + judged_controls])
    ctx.write_json("openness.json", openness_report(rows, controls, judged_controls))


def openness_report(rows: list[dict[str, Any]], controls: list[dict[str, Any]],
                    judged_controls: list[dict[str, Any]]) -> dict[str, Any]:
    labels = Counter(r["openness"]["label"] for r in rows)
    changed = sum(r["openness"]["label"] != r["openness"]["initial_status"] for r in rows)
    report: dict[str, Any] = {
        "changed": {"n": len(rows), "count": changed, "rate": changed / len(rows) if rows else 0.0},
        "labels": {s: labels.get(s, 0) for s in STATUSES}, "n": len(rows),
        "unknown": {"count": labels.get("unknown", 0),
                    "rate": labels.get("unknown", 0) / len(rows) if rows else 0.0},
        "controls": None}
    if controls:
        label_of = {j["task_id"]: j["openness"]["label"] for j in judged_controls}
        resolved = [c["task_id"] for c in controls if c["expected"] == "resolved"]
        negatives = [c["task_id"] for c in controls if c["expected"] == "open"]
        caught = [t for t in resolved if label_of.get(t) == "answered"]
        false_pos = [t for t in negatives if label_of.get(t) == "answered"]
        report["controls"] = {
            "dropped": sorted(c["task_id"] for c in controls if c["task_id"] not in label_of),
            "false_positive_ids": false_pos,
            "false_positives": {"count": len(false_pos), "n": len(negatives)},
            "missed_ids": [t for t in resolved if t not in caught],
            "recall": {"caught": len(caught), "n": len(resolved)}}
    return report


__all__ = ["openness_report", "openness_stage", "read_controls", "verdict"]
