"""The biomedical tools inside a run: answered from a tool snapshot, the replay cache, or live.

Every call is keyed by (tool, canonical arguments) (:func:`~drsearch.agents.snapshot.tool_key`),
and its answer is the envelope bytes of :mod:`drsearch.biotools` (service, requests, access
date, content), so a replayed answer is byte-identical to the recorded one. The order:

- with a tool snapshot: the snapshot's row; a miss is ReplayMissError in mode ``replay``
  (an infrastructure failure, never a silent live call), else a live call recorded in the
  run's cache (mode ``replay-then-live``; ``drsearch run`` freezes those into a new snapshot);
- without one: the run's replay cache in its mode, live behind it (as search and open).

A service that cannot answer is a ToolServiceError (the episode's ``infra_error``).
"""

from __future__ import annotations

import json
from typing import Any

from ..biotools import BIOTOOLS, LiveBioTools, ServiceError
from .canonical import canonical_json
from .errors import ReplayMissError, ToolServiceError
from .replay import ReplayCache
from .searcher import ToolResponse
from .snapshot import ToolSnapshot, tool_key


class BioCalls:
    """Runs checked biomedical tool calls for the episodes of one run (thread-safe)."""

    def __init__(
        self, cache: ReplayCache | None, live: LiveBioTools | None, snapshot: ToolSnapshot | None = None
    ) -> None:
        self.cache, self.live, self.snapshot = cache, live, snapshot
        self.snapshot_hits = 0

    def _live(self, name: str, args: dict[str, Any]) -> tuple[bool, bytes]:
        if self.live is None:
            raise ReplayMissError(f"no live service for {name}({canonical_json(args)})")
        try:  # stored as an answer (ok): a service's own refusal is what the model saw, kept as is
            return True, self.live.call(name, args)
        except ServiceError as e:
            raise ToolServiceError(e.message) from None

    def call(self, name: str, args: dict[str, Any]) -> ToolResponse:
        """The answer to ``name(**args)`` (``args`` canonical: ``BIOTOOLS[name].check``)."""
        describe = f"{name}({canonical_json(args)})"
        if self.snapshot is not None:
            body = self.snapshot.get(tool_key(name, args))
            if body is not None:
                self.snapshot_hits += 1
                return _response(body)
            if self.cache is None or self.cache.mode == "replay" or self.live is None:
                raise ReplayMissError(
                    f"tool snapshot {self.snapshot.path} has no answer for {describe[:300]}"
                )
        if self.cache is None or self.cache.mode == "off":
            return _response(self._live(name, args)[1])
        live = None if self.live is None else (lambda: self._live(name, args))
        _, body = self.cache.fetch("tool", ["tool", name, args], describe, live)
        return _response(body)


def _response(body: bytes) -> ToolResponse:
    return ToolResponse(bool(json.loads(body).get("ok")), body)


def is_biotool(name: str) -> bool:
    return name in BIOTOOLS


__all__ = ["BioCalls", "is_biotool"]
