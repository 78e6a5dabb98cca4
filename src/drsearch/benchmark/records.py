"""The graded-question record: the one interface between judging and scoring.

A :class:`GradedQuestion` is one graded attempt at one question. The judges build
them from a run directory; :mod:`drsearch.benchmark.scoring` turns a sequence of
them into ``scores.json``. Every way an attempt can fail to be correct has its own
:data:`Outcome`, so the report can show each count while accuracy keeps all
questions in its denominator (docs/DESIGN.md, "Evaluation protocol").
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

Outcome = Literal[
    "correct",
    "incorrect",
    "empty_answer",
    "unfinished",
    "agent_error",
    "missing_episode",
    "missing",
    "judge_failed",
    "not_run",
]
"""Why an attempt scored as it did; only ``"correct"`` counts as correct. ``agent_error`` is
the model's (the endpoint refused its request); ``missing`` is not: the question's latest
attempt failed for infrastructure (status ``infra_error``: endpoint or search backend
unreachable, 401/404, replay miss, a local write failure), so the run owes it a rerun.
``not_run``: the run's ``--max-cost`` was spent before the question started; no answer, so
never wrong: :func:`~drsearch.benchmark.scoring.summarize` leaves it out of every number
and lists it."""

NOT_RUN: Outcome = "not_run"
OUTCOMES: tuple[Outcome, ...] = tuple(o for o in get_args(Outcome) if o != NOT_RUN)
"""Every outcome of a question that counts (all but ``not_run``), in the order reports list them."""


class GradedQuestion(BaseModel):
    """One graded attempt at one question.

    Invariants (checked on construction; a violation raises ``pydantic.ValidationError``):
    ``correct`` is true exactly when ``outcome == "correct"``, and ``score``, when set,
    lies in ``[0, 1]``. ``attempt`` numbers repeated attempts from 0.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    question_id: str
    index: int
    attempt: int = Field(default=0, ge=0)
    tier: str | None = None
    category: str | None = None
    answer_type: str | None = None
    difficulty: str | None = None
    episode_status: str
    """From the run store: ``"answered" | "turn_cap" | "budget" | "model_error" | "infra_error"``
    (``"error"`` in runs written before the two were told apart), or ``"missing"`` (no line)."""
    final_answer: str | None = None
    outcome: Outcome
    correct: bool
    score: float | None = None
    """Checklist score in ``[0, 1]`` (OpenBioRQ); ``None`` for yes/no judges."""
    reason: str | None = None
    """E.g. ``"empty_model_response"`` or the judge's parse-failure text."""
    tool_calls: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    wall_s: float | None = Field(default=None, ge=0.0)
    """Episode wall time from ``timings.jsonl``; None when the run recorded none."""
    judge: dict[str, Any] | None = None
    """The verdict record: judge model, prompt hash, parsed fields."""

    @model_validator(mode="after")
    def _consistent(self) -> GradedQuestion:
        if self.correct != (self.outcome == "correct"):
            raise ValueError(f"correct={self.correct} contradicts outcome={self.outcome!r}")
        if self.score is not None and not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score {self.score} is outside [0, 1]")
        return self
