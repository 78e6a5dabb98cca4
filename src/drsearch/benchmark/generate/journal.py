"""A stage's per-item journal: finished items survive Ctrl-C and kill -9.

``OUT/stages/<stage>.journal.jsonl`` starts with a header line naming the stage key (the
hash of the stage's code, inputs and settings); each finished item is one canonical-JSON line
appended and fsynced before the next item is reported done, as the agents run store does. On
reopen a torn last line is cut off, and a journal written under another stage key is
discarded (its items were made from other inputs). The journal is deleted when the stage
completes: by then its results are in the stage's outputs.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from ...agents.canonical import canonical_json


def _line(value: Any) -> bytes:
    return (canonical_json(value) + "\n").encode("utf-8")


class Journal:
    """Thread-safe append-only record of one stage run's finished items, keyed by item key."""

    def __init__(self, path: Path, stage_key: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.done: dict[str, dict[str, Any]] = {}
        self._open(stage_key)

    def _open(self, stage_key: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header = {"journal": 1, "stage_key": stage_key}
        data = self.path.read_bytes() if self.path.exists() else b""
        good = data.rfind(b"\n") + 1  # a torn last line (kill -9 mid-write) is not an item
        lines = data[:good].splitlines()
        try:
            same = bool(lines) and json.loads(lines[0]) == header
            entries = [json.loads(line) for line in lines[1:]] if same else []
        except ValueError:  # not ours, or damaged beyond a torn tail: start the stage afresh
            same, entries = False, []
        if not same:
            with open(self.path, "wb") as fh:
                fh.write(_line(header))
                fh.flush()
                os.fsync(fh.fileno())
            return
        if good != len(data):
            with open(self.path, "r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())
        for entry in entries:
            self.done.setdefault(entry["key"], entry)

    def append(self, entry: dict[str, Any]) -> None:
        """Record one finished item (``entry["key"]`` names it), durably."""
        with self._lock:
            with open(self.path, "ab") as fh:
                fh.write(_line(entry))
                fh.flush()
                os.fsync(fh.fileno())
            self.done.setdefault(entry["key"], entry)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


__all__ = ["Journal"]
