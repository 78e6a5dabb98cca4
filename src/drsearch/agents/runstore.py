"""The run directory: ``run.json``, ``trajectories.jsonl``, ``timings.jsonl``, ``summary.json``.

- ``run.json`` is written once, at the first start; a rerun into the same directory must
  agree on every field of :data:`RESUME_FIELDS` (else RunStoreError names them).
- ``trajectories.jsonl`` gets one canonical-JSON line per episode, appended and fsynced
  before the next; a torn last line (kill -9 mid-write) is cut off on reopen, and a write
  that fails half-way (disk full) is cut back before the error is raised. An episode with
  status ``infra_error`` is recorded (with its reason) but is not *finished*: a rerun
  retries its question, and the finished episode then replaces it. At the end of each
  invocation the file is rewritten, atomically, in benchmark index order with one line per
  question (its finished episode, else its last infra failure), so a resumed run ends
  byte-identical to an uninterrupted one. A question that ``--max-cost`` left unstarted
  gets a ``not_run`` line, likewise not finished: a rerun with a larger budget runs it.
- ``timings.jsonl`` (wall times, retries, cache hits) is kept apart because clocks are not
  reproducible; ``summary.json`` holds the totals of the last invocation.

One writer at a time: :meth:`RunStore.start` locks the directory
(:func:`drsearch.contract.dirlock.lock_dir`) until :meth:`RunStore.close` or the process ends;
a second run on the same ``--out`` is refused (DirectoryBusyError, exit 2, naming the pid).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from ..contract.atomic import write_bytes_atomic, write_json_atomic
from ..contract.dirlock import DirLock, lock_dir
from ..contract.errors import InvalidInputError
from .canonical import canonical_json
from .errors import LocalIOError, RunStoreError
from .loop import INFRA_STATUS, NOT_RUN_STATUS, Episode

_UNFINISHED = (INFRA_STATUS, NOT_RUN_STATUS)

RESUME_FIELDS = ("base_url", "blocklist_sha256", "corpus_identity", "model", "preset", "prompt_sha256",
                 "python_isolation", "questions_sha256", "shard", "tool_schema_sha256")


def _line(record: dict[str, Any]) -> bytes:
    return (canonical_json(record) + "\n").encode("utf-8")


def _write(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` and fsync it (a separate function: the fault-injection
    seam of the I/O tests, which make it fail half-way as a full disk does)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _append(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (unbuffered, fsynced); when a write fails, cut the file back
    to its old end first, so a half-written line never runs into the next one."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        try:
            _write(fd, data)
        except OSError:
            os.ftruncate(fd, end)
            raise
    finally:
        os.close(fd)


class RunStore:
    """One run directory; thread-safe appends. Nothing is written before :meth:`start`."""

    def __init__(self, out: str | Path) -> None:
        self.dir = Path(out)
        self.trajectories = self.dir / "trajectories.jsonl"
        self.timings = self.dir / "timings.jsonl"
        self.timing_write_failures = 0  # timing lines lost to a failed write (counted in the summary)
        self._lock = threading.Lock()
        self._dirlock: DirLock | None = None

    def close(self) -> None:
        """Let another process write this run directory (idempotent)."""
        if self._dirlock is not None:
            self._dirlock.release()
            self._dirlock = None

    def check(self, manifest: dict[str, Any]) -> None:
        """Refuse (RunStoreError) an ``--out`` that cannot be a run directory, or one that holds
        a different run; reads only, so a run can still be refused before anything is written."""
        if self.dir.exists() and not self.dir.is_dir():
            raise RunStoreError(f"--out {self.dir}: cannot make the run directory (not a directory)")
        path = self.dir / "run.json"
        if not path.exists():
            return
        stored: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        differ = [f for f in RESUME_FIELDS
                  if canonical_json(stored.get(f)) != canonical_json(manifest.get(f))]
        if differ:
            raise RunStoreError(f"{self.dir} holds a different run (differs in {', '.join(differ)}); "
                                "use another --out")

    def start(self, manifest: dict[str, Any]) -> None:
        """Make and lock the directory and write run.json, or check a resumed run agrees with it.

        DirectoryBusyError when another live process holds the directory."""
        self.check(manifest)
        if self._dirlock is None:
            try:
                self._dirlock = lock_dir(self.dir, "run directory")
            except InvalidInputError as e:
                raise RunStoreError(f"--out {e.message}") from None
        self.check(manifest)  # again, locked: a run that just finished may have written run.json
        path = self.dir / "run.json"
        if not path.exists():
            try:
                write_json_atomic(path, manifest)
            except OSError as e:
                raise LocalIOError(f"{path}: cannot write ({e.strerror or e})") from None

    def records(self) -> list[dict[str, Any]]:
        """Every episode line on disk, in file order; cuts a torn last line off."""
        if not self.trajectories.exists():
            return []
        data = self.trajectories.read_bytes()
        good = data.rfind(b"\n") + 1
        if good != len(data):
            with open(self.trajectories, "r+b") as fh:
                fh.truncate(good)
                os.fsync(fh.fileno())
        out = []
        for n, line in enumerate(data[:good].splitlines(), 1):
            try:
                out.append(json.loads(line))
            except ValueError:
                raise RunStoreError(f"{self.trajectories}:{n}: not JSON; move the file away") from None
        return out

    def finished(self) -> dict[str, dict[str, Any]]:
        """Finished episodes by qid (first one wins); an ``infra_error`` or ``not_run`` line is not one."""
        done: dict[str, dict[str, Any]] = {}
        for record in self.records():
            if record.get("status") not in _UNFINISHED:
                done.setdefault(record["qid"], record)
        return done

    def latest(self) -> dict[str, dict[str, Any]]:
        """One record per qid: its finished episode, else its last infrastructure failure or
        ``not_run`` line (a question a spent ``--max-cost`` left unstarted)."""
        failed = {r["qid"]: r for r in self.records() if r.get("status") in _UNFINISHED}
        return {**failed, **self.finished()}

    def append(self, episode: Episode) -> None:
        """Append (and fsync) one episode line, then its timing line.

        LocalIOError when a write fails (the trajectory file is cut back to a whole line)."""
        with self._lock:
            try:
                _append(self.trajectories, _line(episode.record))
            except OSError as e:
                raise LocalIOError(f"{self.trajectories}: cannot append the episode of "
                                   f"{episode.record['qid']} ({e.strerror or e})") from None
            try:
                _append(self.timings, (canonical_json(episode.timing) + "\n").encode("utf-8"))
            except OSError:  # clock facts only: the episode itself is safe on disk; counted
                self.timing_write_failures += 1

    def canonicalise(self) -> None:
        """Rewrite trajectories.jsonl in benchmark index order, one line per qid (atomic):
        the finished episode, else the last infrastructure failure."""
        with self._lock:
            records = sorted(self.latest().values(), key=lambda r: (r["index"], r["qid"]))
            write_bytes_atomic(self.trajectories, b"".join(_line(r) for r in records))

    def wall_s(self) -> dict[str, float]:
        """Episode wall time by qid from timings.jsonl (the last line of a qid wins: a retried
        infrastructure failure is followed by the attempt that finished)."""
        wall: dict[str, float] = {}
        try:
            lines = self.timings.read_bytes().splitlines()
        except OSError:
            return wall
        for line in lines:
            try:
                t = json.loads(line)
                wall[str(t["qid"])] = float(t["wall_s"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line (kill -9): clock facts only
        return wall

    def set_cost(self, cost: dict[str, Any] | None) -> None:
        """Put the run's ``cost`` object in run.json (atomically; None removes a stale one): the
        one field rewritten after the start, as each invocation adds episodes and spend."""
        path = self.dir / "run.json"
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        if cost is None and "cost" not in manifest:
            return
        if cost is None:
            del manifest["cost"]
        else:
            manifest["cost"] = cost
        write_json_atomic(path, manifest)

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json_atomic(self.dir / "summary.json", summary)


__all__ = ["RESUME_FIELDS", "RunStore", "write_json_atomic"]
