"""``coverage.json``: every (item, run) pair has a trajectory, and replaying each run offline
(``drsearch run --replay RUN``) reproduces every trajectory byte for byte with no cache miss.

For each run: the items of ``items.jsonl`` it has no trajectory for (``missing``); then the
run replayed into a scratch directory under ``work`` from its own cache, and the items whose
replayed trajectory line differs from the recorded one (``differs``) and the replay's cache
misses. ``complete`` is true when no run misses an item, differs, or misses the cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ....agents import RunSpec, execute_run
from ....agents.canonical import canonical_json, sha256_hex
from ...grade import read_run


def _lines(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out[str(json.loads(line)["qid"])] = canonical_json(json.loads(line))
    return out


def coverage(items: Path, runs: list[Path], work: Path) -> dict[str, Any]:
    lines = items.read_text(encoding="utf-8").splitlines()
    ids = [json.loads(line)["task_id"] for line in lines if line.strip()]
    report: list[dict[str, Any]] = []
    for k, run in enumerate(runs):
        recorded = read_run(run)
        missing = [i for i in ids if i not in recorded.episodes]
        replay_dir = work / f"replay-{k}"
        summary = execute_run(RunSpec(questions=items, out=replay_dir, replay_from=run, quiet=True,
                                      ids=tuple(i for i in ids if i not in missing)))
        before, after = _lines(run / "trajectories.jsonl"), _lines(replay_dir / "trajectories.jsonl")
        differs = [i for i in ids if i not in missing and before.get(i) != after.get(i)]
        misses = sum(int(c.get("misses", 0)) for c in (summary.get("cache") or {}).values())
        digest = sha256_hex((run / "trajectories.jsonl").read_bytes())
        report.append({"differs": differs, "missing": missing, "replay_cache_misses": misses,
                       "run": str(run), "trajectories_sha256": digest})
    complete = all(not r["missing"] and not r["differs"] and r["replay_cache_misses"] == 0 for r in report)
    return {"complete": complete, "items": len(ids), "items_sha256": sha256_hex(items.read_bytes()),
            "runs": report}


__all__ = ["coverage"]
