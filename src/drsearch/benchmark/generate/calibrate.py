"""Difficulty from rollouts: one primitive (:func:`calibrate`) and three bucket rules.

Inputs are ordinary artefacts: run directories of ``drsearch run [--attempt N]`` and the
graded questions ``drsearch score`` writes (``scores.graded.jsonl``; LLM judge or
``--judge numeric``). :func:`calibrate` turns them into, per item and per model,
:class:`ItemStats` (attempts, solved, answered, mean turns, outcomes, checklist scores);
the rules below put each item in a bucket (docs/GENERATE.md, "Calibration"):

- :func:`dr256_bucket`: 3 rollouts of one reference agent. Retained only if every rollout
  is complete (status ``answered``), nonempty and graded (``correct`` or ``incorrect``)
  and the mean number of turns (model calls) is >= 3; solved 3/3 → ``excluded``,
  1–2 → ``frontier``, 0 → ``challenge``. Excluded items carry their reason.
- :func:`drbencher_bucket`: k samples (V1 closed-book, V2 tool-augmented); accuracy =
  solved / k over all k attempts; ``discarded`` iff accuracy **>** τ (strictly: accuracy
  exactly τ is kept), else ``kept``; an item some attempt has no graded episode for is
  ``ungraded`` (its accuracy is not defined).
- :func:`openbiorq_bucket`: a roster of models each scored once; solved iff checklist
  score >= threshold (0.5); ``core`` = solved by none, ``easy`` = by all,
  ``discriminating`` = the rest; ``ungraded`` when a model has no graded episode.
  :func:`frozen_core`: a core item every roster model still fails at temperature 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...contract import InvalidInputError
from ..grade import FINISHED, RunEpisodes
from ..records import GradedQuestion
from ..stats import wilson_interval

RULES = ("dr256", "drbencher-v1", "drbencher-v2", "openbiorq")
DR256_ATTEMPTS = 3
DR256_MIN_TURNS = 3.0
DRBENCHER_K = 10
DRBENCHER_TAU = 0.5
OPENBIORQ_THRESHOLD = 0.5
GRADED = frozenset({"correct", "incorrect"})
"""Outcomes a judge decided (``judge_failed`` is not graded)."""
BUCKETS: dict[str, tuple[str, ...]] = {
    "dr256": ("frontier", "challenge", "excluded"),
    "drbencher-v1": ("kept", "discarded", "ungraded"),
    "drbencher-v2": ("kept", "discarded", "ungraded"),
    "openbiorq": ("core", "discriminating", "easy", "ungraded"),
}
"""Every bucket of each rule, in report order (counts list each, zeros included)."""


@dataclass(frozen=True)
class ItemStats:
    """One item, one model, over its attempts (attempt order)."""

    attempts: int
    solved: int
    answered: int
    """Attempts with status ``answered`` and a nonempty final answer."""
    mean_turns: float
    """Mean number of turns (model calls) over attempts that have an episode; 0.0 if none."""
    outcomes: tuple[str, ...]
    statuses: tuple[str, ...]
    scores: tuple[float | None, ...]

    @property
    def accuracy(self) -> float:
        return self.solved / self.attempts if self.attempts else 0.0

    @property
    def graded(self) -> bool:
        """Every attempt has a judge's decision (``correct`` / ``incorrect``)."""
        return all(o in GRADED for o in self.outcomes)

    def as_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "answered": self.answered, "attempts": self.attempts,
                "mean_turns": self.mean_turns, "outcomes": list(self.outcomes), "scores": list(self.scores),
                "solved": self.solved, "statuses": list(self.statuses)}


def item_stats(episodes: Sequence[dict[str, Any] | None],
               graded: Sequence[GradedQuestion | None]) -> ItemStats:
    """Stats of one item over attempts: ``episodes[i]`` and ``graded[i]`` are attempt i's."""
    if len(episodes) != len(graded):
        raise ValueError("one graded record (or None) per attempt")
    turns = [len(e.get("turns") or ()) for e in episodes if e is not None]
    answered = sum(1 for e in episodes if e is not None and e.get("status") in FINISHED
                   and isinstance(e.get("final_answer"), str) and e["final_answer"].strip())
    outcomes = tuple(g.outcome if g is not None else "ungraded" for g in graded)
    statuses = tuple(str(e.get("status")) if e is not None else "missing" for e in episodes)
    return ItemStats(attempts=len(episodes), solved=sum(o == "correct" for o in outcomes), answered=answered,
                     mean_turns=sum(turns) / len(turns) if turns else 0.0, outcomes=outcomes,
                     statuses=statuses, scores=tuple(g.score if g is not None else None for g in graded))


def calibrate(question_ids: Sequence[str], runs_by_model: Mapping[str, Sequence[RunEpisodes]],
              grades: Mapping[str, Sequence[GradedQuestion]]) -> dict[str, dict[str, ItemStats]]:
    """Per item (question id, in the given order), per model: :class:`ItemStats`.

    ``runs_by_model[m]`` are model m's attempts (attempt i = the i-th run);
    ``grades[m]`` its graded records, matched by (question id, ``attempt``). A graded record
    whose final answer is not its episode's is a grade of another run: InvalidInputError.
    """
    out: dict[str, dict[str, ItemStats]] = {qid: {} for qid in question_ids}
    for model, runs in runs_by_model.items():
        by_key = {(g.question_id, g.attempt): g for g in grades.get(model, ())}
        for qid in question_ids:
            episodes = [run.episodes.get(qid) for run in runs]
            graded = [by_key.get((qid, i)) for i in range(len(runs))]
            for i, (e, g) in enumerate(zip(episodes, graded, strict=True)):
                if g is not None and e is not None and g.final_answer != e.get("final_answer"):
                    raise InvalidInputError(f"{runs[i].path}: the grades of {qid} (attempt {i}) are of "
                                            "another answer: grade these runs with `drsearch score` first")
            out[qid][model] = item_stats(episodes, graded)
    return out


# -- bucket rules ---------------------------------------------------------------------------

def dr256_bucket(stats: ItemStats, *, min_turns: float = DR256_MIN_TURNS) -> tuple[str, str | None]:
    """``(bucket, reason)``: ``frontier`` | ``challenge`` | ``excluded`` (with its reason)."""
    if stats.attempts != DR256_ATTEMPTS:
        return "excluded", f"{stats.attempts} rollout(s), not {DR256_ATTEMPTS}"
    incomplete = [i for i, s in enumerate(stats.statuses) if s not in FINISHED]
    if incomplete:
        return "excluded", f"rollout {incomplete[0]} not complete ({stats.statuses[incomplete[0]]})"
    if stats.answered != stats.attempts:
        return "excluded", "empty final answer in a rollout"
    if not stats.graded:
        bad = next(o for o in stats.outcomes if o not in GRADED)
        return "excluded", f"a rollout is not graded ({bad})"
    if stats.mean_turns < min_turns:
        return "excluded", f"mean turns {stats.mean_turns:.3g} < {min_turns:g}"
    if stats.solved == stats.attempts:
        return "excluded", f"solved {stats.solved}/{stats.attempts}"
    if stats.solved == 0:
        return "challenge", None
    return "frontier", None


def drbencher_bucket(stats: ItemStats, *, tau: float = DRBENCHER_TAU) -> tuple[str, str | None]:
    """``(bucket, reason)``: ``discarded`` iff accuracy > ``tau`` (accuracy == tau is kept)."""
    missing = [o for o in stats.outcomes if o in ("missing_episode", "judge_failed", "ungraded")]
    if missing:
        return "ungraded", f"{len(missing)} of {stats.attempts} attempt(s) without a grade ({missing[0]})"
    if stats.accuracy > tau:
        return "discarded", f"accuracy {stats.solved}/{stats.attempts} > {tau:g}"
    return "kept", None


def solved_by(stats: ItemStats, threshold: float = OPENBIORQ_THRESHOLD) -> bool:
    """OpenBioRQ: the (single) attempt's checklist score is >= ``threshold``."""
    return stats.scores[0] is not None and stats.scores[0] >= threshold


def openbiorq_bucket(by_model: Mapping[str, ItemStats], *,
                     threshold: float = OPENBIORQ_THRESHOLD) -> tuple[str, str | None]:
    """``(bucket, reason)``: ``core`` (solved by none), ``easy`` (by all), ``discriminating``."""
    for model in sorted(by_model):
        outcome = by_model[model].outcomes[0]
        if outcome in ("missing_episode", "judge_failed", "ungraded"):
            return "ungraded", f"{model}: {outcome}"
    solvers = [m for m in sorted(by_model) if solved_by(by_model[m], threshold)]
    if not solvers:
        return "core", None
    if len(solvers) == len(by_model):
        return "easy", None
    return "discriminating", f"solved by {', '.join(solvers)}"


def frozen_core(by_model_t0: Mapping[str, ItemStats], *, threshold: float = OPENBIORQ_THRESHOLD) -> bool:
    """A core item stays core at temperature 0: every roster model's t=0 run is graded and fails it."""
    return all(s.outcomes[0] in GRADED | {"empty_answer", "unfinished", "agent_error"}
               and not solved_by(s, threshold) for s in by_model_t0.values())


# -- the whole report -----------------------------------------------------------------------

def bucket_counts(rule: str, buckets: Sequence[str]) -> dict[str, int]:
    """Every bucket of ``rule`` with its count (zeros included)."""
    counted = Counter(buckets)
    return {b: counted.get(b, 0) for b in BUCKETS[rule]}


def wilson_table(counts: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """Per bucket: count, share of all items and its 95 % Wilson interval."""
    n = sum(counts.values())
    return {b: {"ci95": list(wilson_interval(c, n)), "count": c, "n": n, "rate": c / n if n else 0.0}
            for b, c in counts.items()}



__all__ = ["BUCKETS", "DR256_ATTEMPTS", "DR256_MIN_TURNS", "DRBENCHER_K", "DRBENCHER_TAU", "GRADED",
           "OPENBIORQ_THRESHOLD", "RULES", "ItemStats", "bucket_counts", "calibrate", "dr256_bucket",
           "drbencher_bucket", "frozen_core", "item_stats", "openbiorq_bucket", "solved_by", "wilson_table"]
