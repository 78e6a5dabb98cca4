"""Grading a run directory: every question of the dataset gets one :class:`GradedQuestion`.

Input: a run directory written by ``drsearch run`` (``run.json``, ``trajectories.jsonl``,
optionally ``timings.jsonl``), the dataset's :class:`GradingTask` list and a judge.
Each task is matched to its episode by question id and classified before any judge is
asked (docs/DESIGN.md, "Evaluation protocol"):

- no episode → ``missing_episode``;
- status ``not_run`` (the run's ``--max-cost`` was spent before it started) → ``not_run``
  (no answer, never wrong; left out of the scores and listed);
- status ``infra_error`` (the latest attempt failed for infrastructure, not the model) →
  ``missing``;
- status ``model_error`` (``error`` in older runs) → ``agent_error``; ``turn_cap`` or
  ``budget`` → ``unfinished``;
- a final answer that is empty → ``empty_answer`` (reason ``empty_model_response``;
  the judge is not called);
- otherwise the judge decides: ``correct``, ``incorrect`` or ``judge_failed``.

The order of the result is the tasks' index order, whatever the episodes' order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.canonical import canonical_json
from ..contract import InvalidInputError, read_json_object
from .citations import CitationAuditor
from .datasets import GradingTask
from .datasets._jsonl import read_objects
from .judges import EMPTY_RESPONSE, Judge, is_empty
from .records import GradedQuestion, Outcome

FINISHED = frozenset({"answered", "final"})
"""Episode statuses that carry a final answer (``answered`` is what drsearch.agents writes)."""
UNFINISHED = frozenset({"turn_cap", "budget"})
MODEL_ERRORS = frozenset({"model_error", "error"})
"""Statuses of an episode the endpoint refused for good (``error``: runs written before
model and infrastructure failures were told apart)."""
INFRA_FAILURE = "infra_error"
"""The status of an attempt that failed for infrastructure: graded ``missing``."""
NOT_RUN = "not_run"
"""The status of a question a spent ``--max-cost`` left unstarted: graded ``not_run``."""


@dataclass(frozen=True)
class RunEpisodes:
    """A run directory as read for grading: manifest, episodes by question id, wall times."""

    path: Path
    manifest: dict[str, Any]
    episodes: dict[str, dict[str, Any]]
    wall_s: dict[str, float] = field(default_factory=dict)

    def unknown_ids(self, tasks: Sequence[GradingTask]) -> list[str]:
        """Episode question ids that no task has (a run of another dataset?)."""
        known = {t.question_id for t in tasks}
        return sorted(q for q in self.episodes if q not in known)


def read_run(run_dir: str | Path) -> RunEpisodes:
    """Read a run directory; InvalidInputError if it is not one (names the file and line)."""
    root = Path(run_dir)
    manifest = read_json_object(root / "run.json", missing=f"{root}: not a run directory (no run.json)")
    episodes: dict[str, dict[str, Any]] = {}
    trajectories = root / "trajectories.jsonl"
    if trajectories.exists():
        for where, record in read_objects(trajectories, skip_torn_tail=True):
            if not isinstance(record.get("qid"), str) or not isinstance(record.get("status"), str):
                raise InvalidInputError(f"{where}: an episode needs string 'qid' and 'status'")
            # as the run store reads it: the first finished episode wins; an infrastructure
            # failure stands only until one (a rerun's) comes, and then the latest one does
            held = episodes.get(record["qid"])
            if held is None or held["status"] in (INFRA_FAILURE, NOT_RUN):
                episodes[record["qid"]] = record
    wall: dict[str, float] = {}
    timings = root / "timings.jsonl"
    if timings.exists():
        for _, t in read_objects(timings, skip_torn_tail=True):
            if isinstance(t.get("qid"), str) and isinstance(t.get("wall_s"), int | float):
                wall[t["qid"]] = float(t["wall_s"])  # the last wins: a retried question's final try
    return RunEpisodes(root, manifest, episodes, wall)


def _classify(episode: dict[str, Any] | None) -> tuple[str, Outcome | None, str | None]:
    """``(episode_status, outcome or None when the judge must decide, reason)``."""
    if episode is None:
        return "missing", "missing_episode", "no episode in trajectories.jsonl"
    status = str(episode["status"])
    reason = episode.get("reason")
    if status in FINISHED:
        if is_empty(episode.get("final_answer")):
            return status, "empty_answer", EMPTY_RESPONSE
        return status, None, None
    if status in UNFINISHED:
        return status, "unfinished", reason
    if status == INFRA_FAILURE:
        return status, "missing", reason
    if status == NOT_RUN:
        return status, "not_run", reason
    if status in MODEL_ERRORS:
        return status, "agent_error", reason
    return status, "agent_error", f"unknown episode status {status!r}"


def _accounting(episode: dict[str, Any] | None) -> dict[str, Any]:
    acc = (episode or {}).get("accounting") or {}
    calls = acc.get("tool_calls") or {}
    return {"completion_tokens": int(acc.get("completion_tokens") or 0),
            "prompt_tokens": int(acc.get("prompt_tokens") or 0),
            "tool_calls": sum(int(v) for v in calls.values()) if isinstance(calls, dict) else int(calls)}


def grade_episode(task: GradingTask, episode: dict[str, Any] | None, judge: Judge, *, attempt: int = 0,
                  wall_s: float | None = None, auditor: CitationAuditor | None = None) -> GradedQuestion:
    """Grade one task's episode (None when the run has none)."""
    status, outcome, reason = _classify(episode)
    answer = None if episode is None else episode.get("final_answer")
    score: float | None = None
    record: dict[str, Any] | None = None
    if outcome is None:
        verdict = judge.grade(task, answer)
        outcome, reason, score, record = verdict.outcome, verdict.reason, verdict.score, dict(verdict.record)
    if auditor is not None and status in FINISHED and not is_empty(answer):
        record = {**(record or {}), "citations": [c.as_dict() for c in auditor.audit(answer)]}
    return GradedQuestion(
        question_id=task.question_id, index=task.index, attempt=attempt, tier=task.tier,
        category=task.category, answer_type=task.answer_type, difficulty=task.difficulty,
        episode_status=status, final_answer=answer if isinstance(answer, str) else None,
        outcome=outcome, correct=outcome == "correct",
        score=score, reason=reason, wall_s=wall_s, judge=record, **_accounting(episode))


def grade_run(run: str | Path | RunEpisodes, tasks: Sequence[GradingTask], judge: Judge, *, attempt: int = 0,
              auditor: CitationAuditor | None = None, concurrency: int = 1,
              progress: Callable[[int], None] | None = None) -> list[GradedQuestion]:
    """One :class:`GradedQuestion` per task, in index order; judge calls run ``concurrency`` at once.

    Raises InvalidInputError for a directory that is not a run, or duplicate question ids
    in ``tasks``; ReplayMissError when a replay-only judge cache lacks a verdict.
    """
    episodes = run if isinstance(run, RunEpisodes) else read_run(run)
    ids = [t.question_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise InvalidInputError("duplicate question ids among the tasks")
    ordered = sorted(tasks, key=lambda t: (t.index, t.question_id))

    def one(task: GradingTask) -> GradedQuestion:
        graded = grade_episode(task, episodes.episodes.get(task.question_id), judge, attempt=attempt,
                               wall_s=episodes.wall_s.get(task.question_id), auditor=auditor)
        if progress is not None:
            progress(1)
        return graded

    if concurrency <= 1:
        return [one(t) for t in ordered]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(one, ordered))


def write_graded(path: str | Path, graded: Sequence[GradedQuestion]) -> None:
    """One canonical JSON line per graded question (sorted keys), in the given order.

    Written to a temporary file renamed over ``path``: a failed write leaves an older file whole.
    """
    final = Path(path)
    tmp = final.with_name(final.name + ".tmp")
    try:
        tmp.write_text("".join(canonical_json(g.model_dump(mode="json")) + "\n" for g in graded),
                       encoding="utf-8")
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def read_graded(path: str | Path) -> list[GradedQuestion]:
    """The records :func:`write_graded` wrote; InvalidInputError names a bad line."""
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"{p}: no graded questions there (run `drsearch score` first)")
    out = []
    for where, value in read_objects(p, skip_torn_tail=True):
        try:
            out.append(GradedQuestion.model_validate(value))
        except ValueError as e:
            raise InvalidInputError(f"{where}: not a graded question ({e.__class__.__name__})") from None
    return out


__all__ = ["FINISHED", "INFRA_FAILURE", "MODEL_ERRORS", "UNFINISHED", "RunEpisodes", "grade_episode",
           "grade_run", "read_graded", "read_run", "write_graded"]
