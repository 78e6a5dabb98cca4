"""What a judge needs of one question, whatever dataset it came from.

Each dataset loader turns its rows into :class:`GradingTask` values; the judges and
:func:`drsearch.benchmark.grade.grade_run` read only these. A task never carries
construction metadata (DR-256's answer docids stay in the row model).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

DatasetKind = Literal["dr256", "deepsearchqa", "openbiorq"]
DATASET_KINDS: tuple[DatasetKind, ...] = ("dr256", "deepsearchqa", "openbiorq")

NonEmpty = Annotated[StrictStr, Field(min_length=1)]
CriterionType = Literal["must_mention", "must_acknowledge", "must_ground", "must_avoid"]
CRITERION_TYPES: tuple[CriterionType, ...] = ("must_mention", "must_acknowledge", "must_ground",
                                              "must_avoid")


class Criterion(BaseModel):
    """One frozen checklist criterion (OpenBioRQ): what to check, its kind and weight."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: CriterionType
    weight: Annotated[StrictInt, Field(ge=1, le=3)]
    text: NonEmpty


class GradingTask(BaseModel):
    """One question as the judges see it.

    ``reference`` is the expected answer (DR-256 label, DeepSearchQA answer);
    ``expected_items`` the items a DeepSearchQA answer must hit (one for Single Answer);
    ``checklist`` the OpenBioRQ criteria. The breakdown fields (tier, category, answer
    type, difficulty) are copied into every graded record.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: DatasetKind
    question_id: NonEmpty
    index: Annotated[int, Field(ge=0)]
    question: NonEmpty
    tier: str | None = None
    category: str | None = None
    answer_type: str | None = None
    difficulty: str | None = None
    reference: str | None = None
    expected_items: tuple[str, ...] = ()
    checklist: tuple[Criterion, ...] = ()


__all__ = ["CRITERION_TYPES", "DATASET_KINDS", "Criterion", "CriterionType", "DatasetKind", "GradingTask",
           "NonEmpty"]
