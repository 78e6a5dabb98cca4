"""Model replies the LLM stages read: one JSON object in the reply text, validated strictly
enough to use. A reply that holds none (or the wrong shape) is ``unparseable_reply``: the
candidate is rejected with that check, counted, never guessed at."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

T = TypeVar("T", bound=BaseModel)


class _Reply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Fact(_Reply):
    chain: int = Field(ge=0)
    hops: int = Field(ge=1, le=2)
    text: str = Field(min_length=1)
    triple: tuple[str, str, str]


class CluesReply(_Reply):
    facts: tuple[Fact, ...]


class SupportReply(_Reply):
    supported: bool


class ComposeReply(_Reply):
    question: str = Field(min_length=1)


class RelationsReply(_Reply):
    ok: bool
    unmapped: tuple[str, ...] = ()


def first_json_object(text: str) -> Any:
    """The first JSON object in ``text`` (models wrap it in prose or code fences); None if none."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def parse_reply(text: str, model: type[T]) -> T | None:
    value = first_json_object(text)
    if value is None:
        return None
    try:
        return model.model_validate(value)
    except ValidationError:
        return None


__all__ = ["CluesReply", "ComposeReply", "Fact", "RelationsReply", "SupportReply", "first_json_object",
           "parse_reply"]
