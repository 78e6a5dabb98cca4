"""Reading a small JSON object file (a run's ``run.json``, a calibration, a report) with the
one-line errors every verb gives: the file, and what is wrong with it."""

from __future__ import annotations

import json
import os
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


__all__ = ["read_json_object"]
