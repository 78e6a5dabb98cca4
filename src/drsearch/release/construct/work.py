"""What every construction stage shares: the pool directory, one toolkit run per stage, the summary.

A pool directory ``POOL/`` holds one folder per stage, each a generation-toolkit output
directory (docs/GENERATE.md) of a one-stage pipeline named ``construct-<stage>``::

    POOL/consolidate/pool.jsonl          POOL/urls/urls.txt, url_map.jsonl
    POOL/answers/answers.jsonl           POOL/artifacts/artifact_candidates.jsonl
    POOL/audit/shortcuts.jsonl           POOL/questions/kept.jsonl
    POOL/calibrate/tiers.jsonl, leak_audit.jsonl
    POOL/select/questions.jsonl, selection.jsonl
    POOL/<stage>/manifest.json           inputs' SHA-256, settings, counts, outputs' SHA-256
    POOL/<stage>/candidates.jsonl        every removal with its reason code (``check``)
    POOL/summary.json                    the counts of every stage run so far

A stage's inputs are the earlier stages' files (by absolute path, hashed) and its settings;
rerunning a stage whose inputs and settings are unchanged does nothing, a changed one reruns
and an interrupted one resumes from its per-item journal (the toolkit's contract).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...benchmark.generate import GenerateSettings, Pipeline, Stage, StageContext, run_pipeline
from ...contract import InvalidInputError
from ...contract.atomic import write_json_atomic
from ...contract.dirlock import lock_dir

SUMMARY = "summary.json"
STAGE_ORDER = ("consolidate", "urls", "answers", "artifacts", "audit", "questions", "calibrate", "select")
POOL_FILE = "consolidate/pool.jsonl"
URLS_FILE = "urls/urls.txt"
URL_MAP_FILE = "urls/url_map.jsonl"
ANSWERS_FILE = "answers/answers.jsonl"
ARTIFACTS_FILE = "artifacts/artifact_candidates.jsonl"
SHORTCUTS_FILE = "audit/shortcuts.jsonl"
_MADE_BY = {POOL_FILE: "construct consolidate", URLS_FILE: "construct urls",
            URL_MAP_FILE: "construct urls", ANSWERS_FILE: "construct answers",
            ARTIFACTS_FILE: "construct artifacts", SHORTCUTS_FILE: "construct audit",
            "questions/kept.jsonl": "construct questions", "calibrate/tiers.jsonl": "construct calibrate",
            "calibrate/leak_audit.jsonl": "construct calibrate"}


def stage_input(pool: Path, rel: str) -> Path:
    """An earlier stage's output, absolute; InvalidInputError (exit 2) naming the verb that
    makes it when it is missing."""
    path = (pool / rel).resolve()
    if not path.is_file():
        raise InvalidInputError(f"{pool / rel}: missing (run `drsearch {_MADE_BY[rel]}` first)")
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A stage output (canonical JSONL written by the toolkit) as dicts."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_stage(pool: str | os.PathLike[str], name: str, run: Callable[[StageContext], None], *,
              inputs: tuple[Path, ...], outputs: tuple[str, ...],
              settings: Mapping[str, Any]) -> dict[str, Any]:
    """Run stage ``name`` into ``POOL/name/`` (skipped when up to date, resumed when
    interrupted), then fold its counts into ``POOL/summary.json``; returns the stage's
    manifest entry (``counts``, ``outputs``, …) plus ``ran`` (False: it was up to date)."""
    root = Path(pool)
    with lock_dir(root, "pool"):  # one stage at a time on a pool: they share summary.json
        return _run_stage(root, name, run, inputs, outputs, settings)


def _run_stage(root: Path, name: str, run: Callable[[StageContext], None], inputs: tuple[Path, ...],
               outputs: tuple[str, ...], settings: Mapping[str, Any]) -> dict[str, Any]:
    pipeline = Pipeline(f"construct-{name}", [Stage(name, run, inputs=tuple(str(p) for p in inputs),
                                                   outputs=outputs, settings=dict(settings))])
    result = run_pipeline(pipeline, GenerateSettings(out=root / name, cache_mode="off"))
    entry = json.loads((root / name / "manifest.json").read_text(encoding="utf-8"))["stages"][name]
    write_summary(root)
    return {**entry, "ran": name in result["ran"]}


def write_summary(pool: Path) -> dict[str, Any]:
    """``POOL/summary.json``: per finished stage, its counts (``in``, ``out``, removals by
    reason code) and the facts it reported (``facts.json``), in stage order."""
    stages: dict[str, Any] = {}
    for name in STAGE_ORDER:
        manifest = pool / name / "manifest.json"
        if not manifest.is_file():
            continue
        entry = json.loads(manifest.read_text(encoding="utf-8"))["stages"].get(name)
        if entry is None:
            continue
        facts = pool / name / "facts.json"
        stages[name] = {"counts": entry["counts"], "settings": entry["settings"],
                        "facts": json.loads(facts.read_text(encoding="utf-8")) if facts.is_file() else {}}
    summary = {"format": "drsearch-construct-summary", "format_version": 1, "stage_order": list(stages),
               "stages": stages}
    write_json_atomic(pool / SUMMARY, summary)
    return summary


__all__ = ["ANSWERS_FILE", "ARTIFACTS_FILE", "POOL_FILE", "SHORTCUTS_FILE", "STAGE_ORDER", "SUMMARY",
           "URLS_FILE", "URL_MAP_FILE", "read_rows", "run_stage", "stage_input", "write_summary"]
