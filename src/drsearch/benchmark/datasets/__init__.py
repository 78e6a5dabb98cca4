"""Benchmark datasets: loaders, row schemas and the common :class:`GradingTask`.

Every loader raises :class:`~drsearch.index.InvalidInputError` naming ``file:line`` for
a bad row (``load_questions`` collects problems instead, for ``drsearch validate``).
DR-256's pinned release identities and row sub-models are the release tooling's: import
them from :mod:`.dr256` (or ``drsearch.release.dr256``).
"""

from __future__ import annotations

import os

from .deepsearchqa import ANSWER_TYPES, AnswerType, DeepSearchQATask, filter_tasks, read_deepsearchqa
from .dr256 import QuestionRow, QuestionSet, load_questions, read_dr256
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
    "AnswerType",
    "Criterion",
    "CriterionType",
    "DatasetKind",
    "DeepSearchQATask",
    "GradingTask",
    "OpenBioRQItem",
    "QuestionRow",
    "QuestionSet",
    "filter_tasks",
    "load_questions",
    "load_tasks",
    "read_deepsearchqa",
    "read_dr256",
    "read_openbiorq",
]
