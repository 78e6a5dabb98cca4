"""The judge cache: one SQLite file of verdicts, so re-grading is free and deterministic.

A judgement is keyed by canonical JSON of (judge model, prompt SHA-256, the prompt's
fields: question, reference or items or criteria, and the answer) and stores the
judge's reply bytes. It reuses the agents' :class:`~drsearch.agents.ReplayCache`
(kind ``"judge"``), so the modes mean the same:

- ``replay-then-live`` (default): stored verdicts are reused, anything else asks the
  judge and is stored. A reply that stayed unparseable is a verdict like any other
  (``judge_failed``, reused: at temperature 0 and a fixed seed a re-ask repeats it); a
  judgement whose endpoint failed is stored as a failure and asked again next time;
- ``replay``: only stored verdicts; a miss raises ReplayMissError naming the question;
- ``record``: always ask, store the answer; ``off``: always ask, store nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..agents import CacheMode, ReplayCache

KIND = "judge"


class JudgeCache:
    """Verdict bytes by (model, prompt hash, fields); thread-safe."""

    def __init__(self, path: str | Path | None, mode: CacheMode = "replay-then-live") -> None:
        """``path`` None means mode ``off`` (nothing stored)."""
        self.mode: CacheMode = "off" if path is None else mode
        self._cache = ReplayCache(None if path is None else Path(path), self.mode)

    def close(self) -> None:
        self._cache.close()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def key(model: str, prompt_sha256: str, fields: dict[str, Any]) -> list[Any]:
        """The cache key of one judgement (canonical JSON of it is hashed)."""
        return [model, prompt_sha256, dict(sorted(fields.items()))]

    def fetch(self, model: str, prompt_sha256: str, fields: dict[str, Any], describe: str,
              live: Callable[[], tuple[bool, bytes]] | None) -> tuple[bool, bytes]:
        """The stored ``(ok, bytes)`` of this judgement, or ``live()``'s (stored per the mode)."""
        return self._cache.fetch(KIND, self.key(model, prompt_sha256, fields), describe, live)

    def stats(self) -> dict[str, int]:
        """``{hits, misses, stored}`` of judgements so far."""
        return self._cache.stats().get(KIND, {"hits": 0, "misses": 0, "stored": 0})


__all__ = ["JudgeCache"]
