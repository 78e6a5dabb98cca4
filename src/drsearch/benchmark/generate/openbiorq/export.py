"""The ``export`` stage: ``items.jsonl``, read by ``read_openbiorq`` (grading) and by ``drsearch run``.

Each row has the OpenBioRQ fields (``task_id``, ``question``, ``track``, ``checklist``,
``rubric_sha256``: grading refuses a checklist whose hash changed) and the DR-256 row shape
(``prompt``, ``metadata.qid`` = the task id, ``metadata.benchmark.index``), plus
``metadata.openbiorq``: the source pointer (id, identifier kind, title, url, year), the taxonomy
label and hints, the initial status, the openness label with its evidence ids and the bundle's
SHA-256, the membership figures, and ``difficulty``: the item's bucket with the roster scores
it came from when ``OBRQ_DIR/difficulty.json`` exists (the stage's ``difficulty_sha256``
setting pins which one), else ``{"bucket": null, "absent_because": ...}``, never a guess.
Its ``frozen_core`` flag comes from ``OBRQ_DIR/frozen_core.txt`` (what ``freeze`` published,
its SHA-256 checked against ``frozen_core.json`` and pinned by the ``frozen_core_sha256``
setting), never from the calibration: true or false for a core item once the frozen core
exists, null otherwise. The run's provenance is the directory's ``manifest.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ....agents.canonical import sha256_hex
from ....contract import InvalidInputError
from ..errors import GenerateError
from ..stages import StageContext, file_sha256

SYSTEM = ("You are answering an open biomedical research question. Search the literature corpus with the "
          "search and open tools, say what is known and what is not, and cite the documents you rely on.")


DIFFICULTY = "difficulty.json"
FROZEN_CORE = "frozen_core.txt"
FROZEN_CORE_JSON = "frozen_core.json"
NO_REPORT = ("no difficulty.json in OBRQ_DIR yet: run the roster, `drsearch calibrate --rule openbiorq`, "
             "`drsearch generate openbiorq difficulty`, then export again")


def frozen_core_sha256(obrq_dir: Path) -> str | None:
    """SHA-256 of ``OBRQ_DIR/frozen_core.txt``, checked against the one ``freeze`` recorded in
    ``frozen_core.json``; None when there is no frozen core yet. InvalidInputError (exit 2) for
    a frozen core without its record, or one edited since ``freeze`` wrote it."""
    text, record = obrq_dir / FROZEN_CORE, obrq_dir / FROZEN_CORE_JSON
    if not text.is_file():
        return None
    digest = sha256_hex(text.read_bytes())
    try:
        recorded = json.loads(record.read_text(encoding="utf-8")).get("frozen_core_sha256")
    except FileNotFoundError:
        raise InvalidInputError(f"{record}: missing beside {text}; rerun `drsearch generate openbiorq "
                                "freeze`") from None
    except (OSError, ValueError, AttributeError) as e:
        raise InvalidInputError(f"{record}: unreadable ({e.__class__.__name__}); rerun `drsearch generate "
                                "openbiorq freeze`") from None
    if digest != recorded:
        raise InvalidInputError(f"{text}: SHA-256 {digest[:12]}… is not the {str(recorded)[:12]}… that "
                                f"freeze recorded in {record}; was it edited? Rerun `drsearch generate "
                                "openbiorq freeze`")
    return digest


def read_frozen_core(obrq_dir: Path, pinned: str, difficulty: dict[str, Any] | None) -> set[str]:
    """The ids of ``frozen_core.txt`` (its SHA-256 must still be ``pinned``), each checked to be
    a core item of the difficulty report, over the same questions: a frozen core and a report
    from different calibrations are refused (InvalidInputError) rather than mixed."""
    path = obrq_dir / FROZEN_CORE
    if not path.is_file() or file_sha256(path) != pinned:
        raise GenerateError(f"{path}: changed or removed since the export was set up; run export again")
    if difficulty is None:
        raise InvalidInputError(f"{path}: a frozen core but no {DIFFICULTY}; run `drsearch generate "
                                "openbiorq difficulty` with the calibration freeze used")
    record = json.loads((obrq_dir / FROZEN_CORE_JSON).read_text(encoding="utf-8"))
    if record.get("questions_sha256") != difficulty.get("questions_sha256"):
        raise InvalidInputError(f"{obrq_dir / FROZEN_CORE_JSON}: frozen over other questions (SHA-256 "
                                f"{str(record.get('questions_sha256'))[:12]}…) than {DIFFICULTY} "
                                f"({str(difficulty.get('questions_sha256'))[:12]}…)")
    ids = {line for line in path.read_text(encoding="utf-8").splitlines() if line}
    not_core = sorted(i for i in ids if (difficulty["items"].get(i) or {}).get("bucket") != "core")
    if not_core:
        raise InvalidInputError(f"{path}: {len(not_core)} id(s) not core in {DIFFICULTY} (e.g. "
                                f"{not_core[0]}); freeze and difficulty came from different calibrations")
    return ids


def difficulty_of(task_id: str, report: dict[str, Any] | None,
                  frozen: tuple[set[str], str] | None = None) -> dict[str, Any]:
    """The ``metadata.openbiorq.difficulty`` block of one item: its bucket, the roster scores it
    came from and the frozen-core flag, or ``bucket: null`` with the reason it is absent.
    ``frozen``: the ids of ``frozen_core.txt`` and its SHA-256, or None before ``freeze``."""
    if report is None:
        return {"absent_because": NO_REPORT, "bucket": None}
    entry = report["items"].get(task_id)
    if entry is None:
        return {"absent_because": "not in difficulty.json (its calibration covers other items)",
                "bucket": None}
    flag = (task_id in frozen[0]) if frozen is not None and entry["bucket"] == "core" else None
    return {"bucket": entry["bucket"], "frozen_core": flag,
            "frozen_core_sha256": frozen[1] if frozen is not None else None,
            "questions_sha256": report.get("questions_sha256"), "reason": entry.get("reason"),
            "scores": entry["scores"], "threshold": report.get("threshold")}


def export_rows(items: list[dict[str, Any]], membership: dict[str, Any],
                difficulty: dict[str, Any] | None = None,
                frozen: tuple[set[str], str] | None = None) -> list[dict[str, Any]]:
    """``difficulty``: the difficulty report (``difficulty.json``), or None when there is none;
    ``frozen``: the frozen core's ids and SHA-256 (``frozen_core.txt``), or None."""
    spans = {r["task_id"]: r for r in membership["items"]}
    rows = []
    for index, item in enumerate(items):
        o = item["openness"]
        m = spans[item["task_id"]]
        meta = {
            "benchmark": {"index": index}, "qid": item["task_id"],
            "openbiorq": {
                "difficulty": difficulty_of(item["task_id"], difficulty, frozen),
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
    frozen = None
    if (pinned_core := ctx.settings.get("frozen_core_sha256")) is not None:  # pinned as difficulty.json is
        frozen = read_frozen_core(ctx.out_dir, pinned_core, difficulty), pinned_core
    rows = export_rows(items, membership, difficulty, frozen)
    ctx.count_in(len(items))
    ctx.count_out(len(rows))
    ctx.write_jsonl("items.jsonl", rows)


__all__ = ["DIFFICULTY", "FROZEN_CORE", "FROZEN_CORE_JSON", "NO_REPORT", "SYSTEM", "difficulty_of",
           "export_rows", "export_stage", "frozen_core_sha256", "read_frozen_core"]
