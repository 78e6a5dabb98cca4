"""Reading JSONL dataset files: every problem names the file and line."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ...contract import InvalidInputError, json_object_lines

M = TypeVar("M", bound=BaseModel)


def describe_validation(error: ValidationError) -> str:
    """``field.path: message (+N more)`` for the first problem of a pydantic error."""
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "row"
    more = f" (+{error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {str(first['msg']).removeprefix('Value error, ')}{more}"


def read_objects(path: str | os.PathLike[str], *,
                 skip_torn_tail: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(file:line, object)`` for each non-blank line; InvalidInputError names the bad line.

    ``skip_torn_tail``: a last line without its newline is left out (a file that is appended
    to line by line, such as a run's ``trajectories.jsonl``, ends so after a kill -9).
    """
    name = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InvalidInputError(f"{name}: cannot read ({e.strerror})") from None
    if skip_torn_tail:
        data = data[: data.rfind(b"\n") + 1]
    for n, value in json_object_lines(data.splitlines(), name):
        yield f"{name}:{n}", value


def parse_row(model: type[M], value: dict[str, Any], where: str) -> M:
    """``model`` validated from ``value``; InvalidInputError names ``where`` and the field."""
    try:
        return model.model_validate(value)
    except ValidationError as e:
        raise InvalidInputError(f"{where}: {describe_validation(e)}") from None


def check_unique(ids: list[str], name: str, what: str) -> None:
    """InvalidInputError naming the first few duplicated ids."""
    dups = sorted(i for i, c in Counter(ids).items() if c > 1)
    if dups:
        raise InvalidInputError(f"{name}: duplicate {what} {dups[:5]}")
