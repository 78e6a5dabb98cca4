"""The ``export`` stage: ``items.jsonl``, read by ``read_openbiorq`` (grading) and by ``drsearch run``.

Each row has the OpenBioRQ fields (``task_id``, ``question``, ``track``, ``checklist``,
``rubric_sha256``: grading refuses a checklist whose hash changed) and the DR-256 row shape
(``prompt``, ``metadata.qid`` = the task id, ``metadata.benchmark.index``), plus
``metadata.openbiorq``: the source pointer (id, identifier kind, title, url, year), the taxonomy
label and hints, the initial status, the openness label with its evidence ids and the bundle's
SHA-256, and the membership figures. The run's provenance is the directory's ``manifest.json``.
"""

from __future__ import annotations

from typing import Any

from ..stages import StageContext

SYSTEM = ("You are answering an open biomedical research question. Search the literature corpus with the "
          "search and open tools, say what is known and what is not, and cite the documents you rely on.")


def export_rows(items: list[dict[str, Any]], membership: dict[str, Any]) -> list[dict[str, Any]]:
    spans = {r["task_id"]: r for r in membership["items"]}
    rows = []
    for index, item in enumerate(items):
        o = item["openness"]
        m = spans[item["task_id"]]
        meta = {
            "benchmark": {"index": index}, "qid": item["task_id"],
            "openbiorq": {
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
    import json

    items = ctx.read_jsonl("openness.jsonl")
    membership = json.loads(ctx.path("membership.json").read_text(encoding="utf-8"))
    rows = export_rows(items, membership)
    ctx.count_in(len(items))
    ctx.count_out(len(rows))
    ctx.write_jsonl("items.jsonl", rows)


__all__ = ["SYSTEM", "export_rows", "export_stage"]
