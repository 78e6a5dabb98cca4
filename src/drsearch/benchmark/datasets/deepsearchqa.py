"""DeepSearchQA-style tasks: question, answer, answer type, category.

One JSON object per line. Field names follow the public release and accept our own
spelling: ``problem`` | ``question``, ``problem_category`` | ``category``, ``answer``,
``answer_type`` (``Single Answer`` | ``Set Answer``), optional ``id`` (default
``dsqa-<line position>``, counting from 0) and optional ``answer_items`` (the items of a
set answer). Without ``answer_items`` a Set Answer is split on newlines or semicolons
when it has any, else on commas; a Single Answer is one item.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from ...contract import InvalidInputError
from ._jsonl import check_unique, parse_row, read_objects
from .tasks import GradingTask, NonEmpty

AnswerType = Literal["Single Answer", "Set Answer"]
ANSWER_TYPES: tuple[AnswerType, ...] = ("Single Answer", "Set Answer")


def split_set_answer(answer: str) -> tuple[str, ...]:
    """The items of a set answer given as one string (see the module docstring)."""
    sep = r"[\n;]" if re.search(r"[\n;]", answer) else ","
    return tuple(item.strip() for item in re.split(sep, answer) if item.strip())


class DeepSearchQATask(BaseModel):
    """One task; ``items`` are what a correct answer must contain (one for Single Answer)."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    id: NonEmpty | None = None
    question: NonEmpty = Field(validation_alias=AliasChoices("question", "problem"))
    answer: NonEmpty
    answer_type: AnswerType
    category: NonEmpty = Field(validation_alias=AliasChoices("category", "problem_category"))
    answer_items: Annotated[tuple[NonEmpty, ...], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _items(self) -> DeepSearchQATask:
        single = self.answer_type == "Single Answer"
        if single and self.answer_items is not None and len(self.answer_items) != 1:
            raise ValueError("a Single Answer has exactly one answer item")
        if self.answer_type == "Set Answer" and not split_set_answer(self.answer) and not self.answer_items:
            raise ValueError("a Set Answer needs at least one item")
        return self

    @property
    def items(self) -> tuple[str, ...]:
        if self.answer_items is not None:
            return self.answer_items
        if self.answer_type == "Single Answer":
            return (self.answer.strip(),)
        return split_set_answer(self.answer)


def read_deepsearchqa(path: str | os.PathLike[str]) -> list[GradingTask]:
    """Every task of a DeepSearchQA JSONL file as a :class:`GradingTask`, in file order.

    Raises InvalidInputError naming file:line for a bad row, and for duplicate ids.
    """
    tasks = []
    for position, (where, value) in enumerate(read_objects(path)):
        row = parse_row(DeepSearchQATask, value, where)
        tasks.append(GradingTask(
            kind="deepsearchqa", question_id=row.id or f"dsqa-{position}", index=position,
            question=row.question, reference=row.answer, expected_items=row.items,
            category=row.category, answer_type=row.answer_type))
    if not tasks:
        raise InvalidInputError(f"{os.fspath(path)}: no tasks")
    check_unique([t.question_id for t in tasks], os.fspath(path), "ids")
    return tasks


def filter_tasks(tasks: Iterable[GradingTask], *, categories: str | Iterable[str] | None = None,
                 answer_type: AnswerType | None = None,
                 ids: Iterable[str] | None = None) -> list[GradingTask]:
    """The tasks in any of ``categories`` (one or several), of ``answer_type``, among ``ids``.

    A filter left at None keeps everything. Raises InvalidInputError for an id or a
    category that no task has (a typo would otherwise silently shrink the sample).
    """
    tasks = list(tasks)
    if categories is not None:
        wanted = {categories} if isinstance(categories, str) else set(categories)
        unknown = sorted(wanted - {t.category for t in tasks if t.category})
        if unknown:
            raise InvalidInputError(f"unknown categories {unknown}")
        tasks = [t for t in tasks if t.category in wanted]
    if answer_type is not None:
        if answer_type not in ANSWER_TYPES:
            raise InvalidInputError(f"answer type must be one of {list(ANSWER_TYPES)}, got {answer_type!r}")
        tasks = [t for t in tasks if t.answer_type == answer_type]
    if ids is not None:
        wanted_ids = list(ids)
        unknown = sorted(set(wanted_ids) - {t.question_id for t in tasks})
        if unknown:
            raise InvalidInputError(f"ids not among the selected tasks: {unknown[:5]}")
        keep = set(wanted_ids)
        tasks = [t for t in tasks if t.question_id in keep]
    return tasks


__all__ = ["ANSWER_TYPES", "AnswerType", "DeepSearchQATask", "filter_tasks", "read_deepsearchqa",
           "split_set_answer"]
