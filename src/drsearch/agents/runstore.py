"""The run directory: ``run.json``, ``trajectories.jsonl``, ``timings.jsonl``, ``summary.json``.

- ``run.json`` is written once, at the first start; a rerun into the same directory must
  agree on every field of :data:`RESUME_FIELDS` (else RunStoreError names them).
- ``trajectories.jsonl`` gets one canonical-JSON line per finished episode, appended and
  fsynced before the next; a torn last line (kill -9 mid-write) is cut off on reopen.
  When every selected question is done the file is rewritten, atomically, in benchmark
  index order, so a resumed run ends byte-identical to an uninterrupted one.
- ``timings.jsonl`` (wall times, retries, cache hits) is kept apart because clocks are not
  reproducible; ``summary.json`` holds the totals of the last invocation.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from ..index.atomic import write_bytes_atomic, write_json_atomic
from .canonical import canonical_json
from .errors import RunStoreError
from .loop import Episode

RESUME_FIELDS = ("base_url", "blocklist_sha256", "corpus_identity", "model", "preset", "prompt_sha256",
                 "questions_sha256", "tool_schema_sha256")


def _line(record: dict[str, Any]) -> bytes:
    return (canonical_json(record) + "\n").encode("utf-8")


class RunStore:
    """One run directory; thread-safe appends."""

    def __init__(self, out: str | Path) -> None:
        self.dir = Path(out)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunStoreError(f"--out {self.dir}: cannot make the run directory ({e.strerror})") from None
        self.trajectories = self.dir / "trajectories.jsonl"
        self.timings = self.dir / "timings.jsonl"
        self._lock = threading.Lock()

    def start(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Write run.json, or check a resumed run agrees with it; returns the stored manifest."""
        path = self.dir / "run.json"
        if not path.exists():
            write_json_atomic(path, manifest)
            return manifest
        stored: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        differ = [f for f in RESUME_FIELDS
                  if canonical_json(stored.get(f)) != canonical_json(manifest.get(f))]
        if differ:
            raise RunStoreError(f"{self.dir} holds a different run (differs in {', '.join(differ)}); "
                                "use another --out")
        return stored

    def finished(self) -> dict[str, dict[str, Any]]:
        """Episodes already on disk by qid (first one wins); cuts a torn last line off."""
        if not self.trajectories.exists():
            return {}
        data = self.trajectories.read_bytes()
        good = data.rfind(b"\n") + 1
        if good != len(data):
            with open(self.trajectories, "r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())
        done: dict[str, dict[str, Any]] = {}
        for n, line in enumerate(data[:good].splitlines(), 1):
            try:
                record = json.loads(line)
            except ValueError:
                raise RunStoreError(f"{self.trajectories}:{n}: not JSON; move the file away") from None
            done.setdefault(record["qid"], record)
        return done

    def append(self, episode: Episode) -> None:
        """Append (and fsync) one episode line, then its timing line."""
        with self._lock:
            with open(self.trajectories, "ab") as fh:
                fh.write(_line(episode.record))
                fh.flush()
                os.fsync(fh.fileno())
            with open(self.timings, "a", encoding="utf-8") as fh:
                fh.write(canonical_json(episode.timing) + "\n")

    def canonicalise(self) -> None:
        """Rewrite trajectories.jsonl in benchmark index order, one line per qid (atomic)."""
        with self._lock:
            records = sorted(self.finished().values(), key=lambda r: (r["index"], r["qid"]))
            write_bytes_atomic(self.trajectories, b"".join(_line(r) for r in records))

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json_atomic(self.dir / "summary.json", summary)


__all__ = ["RESUME_FIELDS", "RunStore", "write_json_atomic"]
