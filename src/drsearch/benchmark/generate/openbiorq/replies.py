"""What the pipeline's models must answer, and the checks that turn a reply into data.

Every reply is one JSON object (code fences around it are allowed). A reply that is not,
or that breaks its schema, raises :class:`UnparseableReply` with a one-line reason: the
stage drops the item with that reason (counted in ``candidates.jsonl``), never guesses.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from ...datasets._jsonl import describe_validation

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
Text = Annotated[StrictStr, Field(min_length=1)]
STATUSES = ("open", "partially_answered", "answered", "unknown")
M = TypeVar("M", bound=BaseModel)


class UnparseableReply(ValueError):
    """A model reply that is not the JSON object its schema asks for (the reason is the message)."""


class ExtractReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    questions: tuple[Text, ...]


class GoldReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    answer: Text


class RefineReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    self_contained_question: Text
    taxonomy: Text
    difficulty_hints: Annotated[tuple[Text, ...], Field(min_length=3, max_length=3)]
    tool_hints: tuple[Text, ...]
    initial_status: Literal["open", "partially_answered", "answered", "unknown"]
    status_reasoning: Text


class DraftCriterion(BaseModel):
    """A rubric criterion as drafted: types and weights are checked by the rubric rules, so a
    draft with a wrong type is a rejected draft (redrafted), not an unparseable reply."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: StrictStr
    weight: Any
    text: StrictStr


class RubricReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    criteria: tuple[DraftCriterion, ...]


class CriterionCheck(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: StrictInt
    binary: StrictBool
    specific: StrictBool


class SpecificityReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    criteria: tuple[CriterionCheck, ...]


class YesNoReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    self_contained: Literal["yes", "no"]
    reason: StrictStr = ""


def json_reply(content: str) -> dict[str, Any]:
    """The one JSON object of a reply; UnparseableReply otherwise."""
    text = _FENCE.sub("", content.strip()).strip()
    if not text:
        raise UnparseableReply("empty reply")
    try:
        value = json.loads(text)
    except ValueError as e:
        raise UnparseableReply(f"not JSON ({e.__class__.__name__}: {str(e)[:80]}); reply began "
                               f"{content.strip()[:60]!r}") from None
    if not isinstance(value, dict):
        raise UnparseableReply(f"not a JSON object but {type(value).__name__}")
    return value


def parse_reply(model: type[M], content: str) -> M:
    """``content`` as ``model``; UnparseableReply naming the first schema problem."""
    try:
        return model.model_validate(json_reply(content))
    except ValidationError as e:
        raise UnparseableReply(f"schema: {describe_validation(e)}") from None




class OpennessReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["open", "partially_answered", "answered", "unknown"]
    evidence_ids: tuple[StrictStr, ...]
    reasoning: StrictStr = ""


__all__ = ["STATUSES", "CriterionCheck", "DraftCriterion", "ExtractReply", "GoldReply", "OpennessReply",
           "RefineReply",
           "RubricReply", "SpecificityReply", "UnparseableReply", "YesNoReply", "json_reply", "parse_reply"]
