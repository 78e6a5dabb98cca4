"""A minimal reader of DR-256 question rows (what the agent loop needs, nothing more).

The full row model lives in ``drsearch.release.dr256``; the agents layer may not import
tools, so this reads only ``prompt`` (the frozen messages, used as given),
``metadata.qid`` and ``metadata.benchmark.index``. Other fields are ignored here, and
``label`` and answer docids are never shown to an agent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..contract import InvalidInputError
from .canonical import sha256_hex, sha256_json
from .errors import describe_validation_error


class PromptMessage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str = Field(pattern="^(system|user|assistant)$")
    content: str


class Question(BaseModel):
    """One question: its stable id, benchmark index and frozen prompt messages."""

    model_config = ConfigDict(frozen=True)

    qid: str = Field(min_length=1)
    index: int = Field(ge=0)
    prompt: tuple[PromptMessage, ...] = Field(min_length=1)

    def prompt_messages(self) -> list[dict[str, Any]]:
        """The frozen messages as chat-completions dicts, exactly as given in the row."""
        return [{"content": m.content, "role": m.role} for m in self.prompt]

    @property
    def prompt_sha256(self) -> str:
        return sha256_json(self.prompt_messages())


def question_from_row(row: dict[str, Any], where: str) -> Question:
    """Build a :class:`Question` from a DR-256 row; InvalidInputError names ``where``."""
    try:
        meta = row["metadata"]
        return Question(qid=meta["qid"], index=meta["benchmark"]["index"], prompt=row["prompt"])
    except ValidationError as e:
        why = describe_validation_error(e)
        raise InvalidInputError(f"{where}: not a DR-256 question row ({why})") from None
    except KeyError as e:
        raise InvalidInputError(f"{where}: not a DR-256 question row (no {e.args[0]!r})") from None
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{where}: not a DR-256 question row ({e})") from None


def read_questions(path: str | Path) -> tuple[list[Question], str]:
    """All questions of a JSONL file, in file order, and the file's SHA-256.

    Raises InvalidInputError for unreadable lines, and for duplicate qids or indexes
    (seeds and resume keys must be unique).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InvalidInputError(f"{p}: cannot read questions ({e.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        at = data.count(b"\n", 0, e.start) + 1
        raise InvalidInputError(f"{p}:{at}: not UTF-8 (byte {e.start})") from None
    questions: list[Question] = []
    for n, line in enumerate(text.split("\n"), 1):  # not splitlines(): U+2028 may sit inside a string
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"{p}:{n}: invalid JSON ({e.msg})") from None
        questions.append(question_from_row(row, f"{p}:{n}"))
    for attr in ("qid", "index"):
        seen: set[object] = set()
        for q in questions:
            value = getattr(q, attr)
            if value in seen:
                raise InvalidInputError(f"{p}: duplicate question {attr} {value!r}")
            seen.add(value)
    if not questions:
        raise InvalidInputError(f"{p}: no questions")
    return questions, sha256_hex(data)


__all__ = ["PromptMessage", "Question", "question_from_row", "read_questions"]
