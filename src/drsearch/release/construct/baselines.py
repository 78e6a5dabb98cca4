"""``RELEASE/baselines/``: the calibration rollouts a release was selected with, kept as the
fresh reference runs its protocol checks compare against (the DR-256 card's ``baselines/``).

For each rollout (attempt N of the reference agent)::

    baselines/attempt-N/run.json            its run.json, less where and when it ran
    baselines/attempt-N/trajectories.jsonl  every episode, as recorded
    baselines/scores.graded.jsonl           the grades the calibration read: every question
                                            of every attempt, its outcome and the verdict

``run.json`` loses ``started_at``, ``base_url`` and ``search`` (a clock and the ports of the
servers of that machine) and each graded record its ``wall_s`` (null: a clock fact):
paths are written relative to the construction's work directory (``.portable``):
everything that says *what* ran and how it was graded (model, preset, prompts, corpus
identity, blocklist, tool schema, code version, verdicts) is kept, and the same rollouts give
the same release bytes. Caches, timings and scores.json (whose means hold wall times) stay
out; ``drsearch score`` rebuilds the summary from the graded records' run directories.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ...agents.canonical import canonical_json
from ...agents.preset import DR256
from ...contract import InvalidInputError
from ..documents import BASELINES
from ..manifest import manifest_json
from .portable import portable

LOCAL_FIELDS = ("base_url", "search", "started_at")
"""run.json fields that say where and when a rollout ran, not what ran: left out of baselines/."""
_ATTEMPTS = 3


def _attempt(run_json: dict[str, object], where: Path) -> int:
    for n in range(_ATTEMPTS):
        if run_json.get("preset") == DR256.for_attempt(n).model_dump(mode="json"):
            return n
    raise InvalidInputError(f"{where}: not a dr256 rollout (its preset is no attempt 0..2 of dr256)")


def write_baselines(release: Path, runs: list[str], grades: str | None, *, base: str) -> list[str]:
    """Copy the rollouts ``runs`` and the graded file ``grades`` into ``release/baselines/``
    (see the module doc; paths made portable against the work directory ``base``); returns
    the attempt directory names written."""
    out = release / BASELINES
    out.mkdir()
    names = []
    for run in runs:
        root = Path(run)
        try:
            recorded = json.loads((root / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise InvalidInputError(f"{root / 'run.json'}: cannot read the rollout ({e})") from None
        name = f"attempt-{_attempt(recorded, root)}"
        (out / name).mkdir()
        kept = portable({k: v for k, v in recorded.items() if k not in LOCAL_FIELDS}, base)
        (out / name / "run.json").write_bytes(manifest_json(kept))
        shutil.copyfile(root / "trajectories.jsonl", out / name / "trajectories.jsonl")
        names.append(name)
    if grades is not None:
        lines = []
        for line in Path(grades).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if isinstance(record, dict) and "wall_s" in record:
                record["wall_s"] = None
            lines.append(canonical_json(record) + "\n")  # as drsearch score writes it
        (out / "scores.graded.jsonl").write_text("".join(lines), encoding="utf-8")
    return sorted(names)


__all__ = ["LOCAL_FIELDS", "write_baselines"]
