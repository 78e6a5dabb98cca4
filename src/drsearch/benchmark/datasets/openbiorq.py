"""OpenBioRQ-style items: ``task_id`` (``source_id#k``), question, track, frozen checklist.

One JSON object per line: ``task_id``, ``question``, ``track`` and ``checklist``, a list
of 5–8 criteria ``{type, weight, text}`` with type ``must_mention`` | ``must_acknowledge``
| ``must_ground`` | ``must_avoid`` and weight 1–3. Extra keys are allowed on the item.
"""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from ...index import InvalidInputError
from ._jsonl import check_unique, parse_row, read_objects
from .tasks import Criterion, GradingTask, NonEmpty

TaskId = Annotated[str, Field(pattern=r"^[^#\s]+#\d+$", strict=True)]


class OpenBioRQItem(BaseModel):
    """One item with its frozen checklist."""

    model_config = ConfigDict(frozen=True, extra="allow")

    task_id: TaskId
    question: NonEmpty
    track: NonEmpty
    checklist: Annotated[tuple[Criterion, ...], Field(min_length=5, max_length=8)]

    @property
    def source_id(self) -> str:
        return self.task_id.rsplit("#", 1)[0]


def read_openbiorq(path: str | os.PathLike[str]) -> list[GradingTask]:
    """Every item of an OpenBioRQ JSONL file as a :class:`GradingTask`, in file order.

    Raises InvalidInputError naming file:line for a bad item, and for duplicate task ids.
    The track is the task's category in breakdowns.
    """
    tasks = []
    for position, (where, value) in enumerate(read_objects(path)):
        item = parse_row(OpenBioRQItem, value, where)
        tasks.append(GradingTask(kind="openbiorq", question_id=item.task_id, index=position,
                                 question=item.question, category=item.track, checklist=item.checklist))
    if not tasks:
        raise InvalidInputError(f"{os.fspath(path)}: no items")
    check_unique([t.question_id for t in tasks], os.fspath(path), "task ids")
    return tasks


__all__ = ["OpenBioRQItem", "read_openbiorq"]
