"""Reading JSON objects from files with the one-line errors every verb gives (the file, the
line, what is wrong): a small JSON object file (a run's ``run.json``, a calibration) and the
lines of a JSONL file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import DrsearchError, InvalidInputError


def read_json_object(path: str | os.PathLike[str], *, missing: str | None = None,
                     error: type[DrsearchError] = InvalidInputError) -> dict[str, Any]:
    """The JSON object in ``path``. Raises ``error`` (InvalidInputError unless given) in one
    line: ``missing`` (default ``"PATH: no such file"``) when there is no such file,
    ``PATH: unreadable (...)`` for an unreadable file or bad JSON, ``PATH: not a JSON
    object`` for any other value."""
    p = Path(path)
    try:
        value = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(missing or f"{p}: no such file") from None
    except (OSError, ValueError) as e:
        raise error(f"{p}: unreadable ({e.__class__.__name__}: {e})") from None
    if not isinstance(value, dict):
        raise error(f"{p}: not a JSON object")
    return value


def json_object_lines(lines: Iterable[str | bytes], name: object, *, what: str = "a line",
                      error: type[DrsearchError] = InvalidInputError) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSONL file named ``name``. Raises
    ``error`` naming ``name:line``: ``not valid JSON (...)``, or ``WHAT must be a JSON object``."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (UnicodeDecodeError, ValueError) as e:
            raise error(f"{name}:{n}: not valid JSON ({e})") from None
        if not isinstance(value, dict):
            raise error(f"{name}:{n}: {what} must be a JSON object")
        yield n, value


__all__ = ["json_object_lines", "read_json_object"]
