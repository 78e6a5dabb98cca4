"""Benchmark datasets: loaders, row schemas and the common :class:`GradingTask`.

Every loader raises :class:`~drsearch.index.InvalidInputError` naming ``file:line`` for
a bad row (``load_questions`` collects problems instead, for ``drsearch validate``).
"""

from __future__ import annotations

import os

from .deepsearchqa import (
    ANSWER_TYPES,
    AnswerType,
    DeepSearchQATask,
    filter_tasks,
    read_deepsearchqa,
    split_set_answer,
)
from .dr256 import (
    DR256_V1_1_0,
    PINNED_RELEASES,
    BenchmarkInfo,
    PinnedRelease,
    PromptMessage,
    QuestionMetadata,
    QuestionRow,
    QuestionSet,
    load_questions,
    normalise_question,
    pinned_for,
    pins_named,
    read_dr256,
)
from .openbiorq import OpenBioRQItem, read_openbiorq
from .tasks import CRITERION_TYPES, DATASET_KINDS, Criterion, CriterionType, DatasetKind, GradingTask


def load_tasks(kind: DatasetKind, path: str | os.PathLike[str]) -> list[GradingTask]:
    """The grading tasks of a ``kind`` dataset file (InvalidInputError for bad input)."""
    if kind == "dr256":
        return read_dr256(path).tasks()
    if kind == "deepsearchqa":
        return read_deepsearchqa(path)
    return read_openbiorq(path)


__all__ = [
    "ANSWER_TYPES",
    "CRITERION_TYPES",
    "DATASET_KINDS",
    "DR256_V1_1_0",
    "PINNED_RELEASES",
    "AnswerType",
    "BenchmarkInfo",
    "Criterion",
    "CriterionType",
    "DatasetKind",
    "DeepSearchQATask",
    "GradingTask",
    "OpenBioRQItem",
    "PinnedRelease",
    "PromptMessage",
    "QuestionMetadata",
    "QuestionRow",
    "QuestionSet",
    "filter_tasks",
    "load_questions",
    "load_tasks",
    "normalise_question",
    "pinned_for",
    "pins_named",
    "read_deepsearchqa",
    "read_dr256",
    "read_openbiorq",
    "split_set_answer",
]
