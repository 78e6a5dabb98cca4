"""The ``export`` stage: ``items.jsonl``, read by ``read_openbiorq`` (grading) and by ``drsearch run``.

Each row has the OpenBioRQ fields (``task_id``, ``question``, ``track``, ``checklist``,
``rubric_sha256``: grading refuses a checklist whose hash changed) and the DR-256 row shape
(``prompt``, ``metadata.qid`` = the task id, ``metadata.benchmark.index``), plus
``metadata.openbiorq``: the source pointer (id, identifier kind, title, url, year), the taxonomy
label and hints, the initial status, the openness label with its evidence ids and the bundle's
SHA-256, the membership figures, and ``difficulty``: the item's bucket with the roster scores
it came from when ``OBRQ_DIR/difficulty.json`` exists (the stage's ``difficulty_sha256``
setting pins which one), else ``{"bucket": null, "absent_because": ...}``, never a guess.
The run's provenance is the directory's ``manifest.json``.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import GenerateError
from ..stages import StageContext, file_sha256

SYSTEM = ("You are answering an open biomedical research question. Search the literature corpus with the "
          "search and open tools, say what is known and what is not, and cite the documents you rely on.")


DIFFICULTY = "difficulty.json"
NO_REPORT = ("no difficulty.json in OBRQ_DIR yet: run the roster, `drsearch calibrate --rule openbiorq`, "
             "`drsearch generate openbiorq difficulty`, then export again")


def difficulty_of(task_id: str, report: dict[str, Any] | None) -> dict[str, Any]:
    """The ``metadata.openbiorq.difficulty`` block of one item: its bucket, the roster scores it
    came from and the frozen-core flag, or ``bucket: null`` with the reason it is absent."""
    if report is None:
        return {"absent_because": NO_REPORT, "bucket": None}
    entry = report["items"].get(task_id)
    if entry is None:
        return {"absent_because": "not in difficulty.json (its calibration covers other items)",
                "bucket": None}
    return {"bucket": entry["bucket"], "frozen_core": entry.get("frozen_core"),
            "questions_sha256": report.get("questions_sha256"), "reason": entry.get("reason"),
            "scores": entry["scores"], "threshold": report.get("threshold")}


def export_rows(items: list[dict[str, Any]], membership: dict[str, Any],
                difficulty: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """``difficulty``: the difficulty report (``difficulty.json``), or None when there is none."""
    spans = {r["task_id"]: r for r in membership["items"]}
    rows = []
    for index, item in enumerate(items):
        o = item["openness"]
        m = spans[item["task_id"]]
        meta = {
            "benchmark": {"index": index}, "qid": item["task_id"],
            "openbiorq": {
                "difficulty": difficulty_of(item["task_id"], difficulty),
                "difficulty_hints": item["difficulty_hints"], "initial_status": item["initial_status"],
                "membership": {"jaccard": m["jaccard"], "longest_span": m["longest_span"]},
                "openness": {"bundle_sha256": o["bundle_sha256"], "evidence_ids": o["evidence_ids"],
                             "label": o["label"], "rejected_ids": o["rejected_ids"]},
                "rubric_sha256": item["rubric_sha256"],
                "source": {"id_kind": item["id_kind"], "source_id": item["source_id"], "title": item["title"],
                           "url": item["url"], "year": item["year"]},
                "taxonomy": item["taxonomy"], "tool_hints": item["tool_hints"]}}
        rows.append({"checklist": item["checklist"], "metadata": meta,
                     "prompt": [{"content": SYSTEM, "role": "system"},
                                {"content": f"Question: {item['question']}\nAnswer:", "role": "user"}],
                     "question": item["question"], "rubric_sha256": item["rubric_sha256"],
                     "task_id": item["task_id"], "track": item["track"]})
    return rows


def export_stage(ctx: StageContext) -> None:
    items = ctx.read_jsonl("openness.jsonl")
    membership = json.loads(ctx.path("membership.json").read_text(encoding="utf-8"))
    difficulty = None
    # difficulty.json is written by a report, not a stage, so it is pinned by its SHA-256 in the
    # settings (a path input would put OBRQ_DIR's absolute path into the manifest)
    if (pinned := ctx.settings.get("difficulty_sha256")) is not None:
        path = ctx.out_dir / DIFFICULTY
        if not path.is_file() or file_sha256(path) != pinned:
            raise GenerateError(f"{path}: changed or removed since the export was set up; run export again")
        difficulty = json.loads(path.read_text(encoding="utf-8"))
    rows = export_rows(items, membership, difficulty)
    ctx.count_in(len(items))
    ctx.count_out(len(rows))
    ctx.write_jsonl("items.jsonl", rows)


__all__ = ["DIFFICULTY", "NO_REPORT", "SYSTEM", "difficulty_of", "export_rows", "export_stage"]
