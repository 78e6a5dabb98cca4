"""OpenBioRQ-style items: ``task_id`` (``source_id#k``), question, track, frozen checklist.

One JSON object per line: ``task_id``, ``question``, ``track`` and ``checklist``, a list
of 5–8 criteria ``{type, weight, text}`` with type ``must_mention`` | ``must_acknowledge``
| ``must_ground`` | ``must_avoid`` and weight 1–3, at least one ``must_acknowledge`` and
one ``must_avoid`` (a checklist that never asks the answer to admit uncertainty, or never
names a claim to avoid, cannot tell an open question's answer from an overconfident one).
Extra keys are allowed on the item. An item that carries ``rubric_sha256`` (the pipeline's
export does) must hold the checklist of that hash (:func:`rubric_sha256`): grading refuses a
rubric edited after its difficulty was computed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...contract import InvalidInputError, canonical_json
from ._jsonl import check_unique, parse_row, read_objects
from .tasks import Criterion, GradingTask, NonEmpty

TaskId = Annotated[str, Field(pattern=r"^[^#\s]+#\d+$", strict=True)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", strict=True)]


def rubric_sha256(checklist: Sequence[Criterion] | Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 of a checklist: canonical JSON of its ``[{text, type, weight}, ...]`` in order."""
    rows = [c.model_dump() if isinstance(c, Criterion) else {k: c[k] for k in ("text", "type", "weight")}
            for c in checklist]
    # the canonical JSON spelling of agents.canonical (index.canonical_json), without importing the agents
    # layer: reading datasets needs no HTTP client
    return hashlib.sha256(canonical_json(rows).encode("utf-8")).hexdigest()


class OpenBioRQItem(BaseModel):
    """One item with its frozen checklist."""

    model_config = ConfigDict(frozen=True, extra="allow")

    task_id: TaskId
    question: NonEmpty
    track: NonEmpty
    checklist: Annotated[tuple[Criterion, ...], Field(min_length=5, max_length=8)]
    rubric_sha256: Sha256 | None = None

    @model_validator(mode="after")
    def _rules(self) -> OpenBioRQItem:
        types = {c.type for c in self.checklist}
        missing = [t for t in ("must_acknowledge", "must_avoid") if t not in types]
        if missing:
            raise ValueError(f"checklist has no {' and no '.join(missing)} criterion")
        if self.rubric_sha256 is not None and rubric_sha256(self.checklist) != self.rubric_sha256:
            now = rubric_sha256(self.checklist)
            raise ValueError(f"checklist changed after it was frozen (SHA-256 {now[:12]}…, "
                             f"rubric_sha256 {self.rubric_sha256[:12]}…)")
        return self

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


__all__ = ["OpenBioRQItem", "read_openbiorq", "rubric_sha256"]
