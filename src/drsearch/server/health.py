"""What /health reports beyond identity: damage seen while serving, and the deep check.

Both live in the run's directory (``ServerSettings.metrics_dir``), so every worker reports
the whole server's state:

- ``corrupt.json``: written by the first worker that meets damaged bytes while answering a
  request (a ``CorruptIndexError``); from then on /health says ``degraded``.
- ``verify.json``: the state of the one background deep verification ``drsearch serve``
  runs per server (``pending``, ``ok``, ``failed``), written by that job
  (:mod:`drsearch.server.deepcheck`). Without the file: ``off`` (no background check:
  ``--verify none`` or ``deep``, which checked before serving, or an app built in-process).

Without a directory (an app built by ``create_app`` in-process) the state is this
process's only.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

from ..contract.atomic import write_json_atomic

logger = logging.getLogger("drsearch.server")
VerifyState = Literal["off", "pending", "ok", "failed"]
VERIFY_FILE = "verify.json"
CORRUPT_FILE = "corrupt.json"


def write_verify_state(directory: Path, state: VerifyState, message: str = "") -> None:
    """Record the background deep verification's state for every worker's /health."""
    write_json_atomic(directory / VERIFY_FILE, {"state": state, "message": message})


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:  # written atomically: only a foreign file gets here
        return {"state": "failed", "message": f"unreadable {path.name}: {e.__class__.__name__}"}
    return value if isinstance(value, dict) else None


class HealthState:
    """The server's health beyond identity, shared by the workers through ``directory``."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._corrupt: str | None = None

    def mark_corrupt(self, message: str) -> None:
        """Note damage met while answering (once per process; the first message is kept)."""
        if self._corrupt is not None:
            return
        self._corrupt = message
        logger.error("the index is damaged: %s", message)
        if self.directory is not None and not (self.directory / CORRUPT_FILE).exists():
            try:
                write_json_atomic(self.directory / CORRUPT_FILE, {"message": message})
            except OSError as e:
                logger.error("cannot record the damage in %s: %s", self.directory, e)

    def corrupt(self) -> str | None:
        """The first damage any worker met, or None."""
        if self._corrupt is not None or self.directory is None:
            return self._corrupt
        found = _read_json(self.directory / CORRUPT_FILE)
        return None if found is None else str(found.get("message", "damaged"))

    def verification(self) -> dict[str, str]:
        """``{"state", "message"}`` of the background deep verification."""
        found = _read_json(self.directory / VERIFY_FILE) if self.directory is not None else None
        if found is None:
            return {"state": "off", "message": ""}
        state = found.get("state")
        if state not in ("pending", "ok", "failed"):
            return {"state": "failed", "message": f"bad {VERIFY_FILE}: state {str(state)[:20]!r}"}
        return {"state": str(state), "message": str(found.get("message", ""))}

    def body(self) -> dict[str, Any]:
        """The dynamic part of /health: ``status``, ``problems`` and ``verify``."""
        verify = self.verification()
        problems = []
        corrupt = self.corrupt()
        if corrupt is not None:
            problems.append(f"damaged bytes met while serving: {corrupt}")
        if verify["state"] == "failed":
            problems.append(f"deep verification failed: {verify['message']}")
        return {"status": "degraded" if problems else "ok", "problems": problems, "verify": verify}


__all__ = ["CORRUPT_FILE", "VERIFY_FILE", "HealthState", "VerifyState", "write_verify_state"]
