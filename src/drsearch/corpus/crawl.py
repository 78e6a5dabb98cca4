"""The crawl directory: one JSONL fetch record per URL plus compressed raw bodies.

Layout of a crawl directory ``crawl/``::

    crawl/fetches.jsonl        one FetchRecord per line, appended and fsynced one at a time
    crawl/bodies/<key>.gz      the raw response body of a successful fetch (gzip)
    crawl/fetch_summary.json   counts of the last ``fetch`` run (written by atomic rename)

A body file is written under a temporary name and renamed into place before its record
is appended, so every record that names a body can rely on it. Records are append-only:
a URL fetched again (a transient failure retried on a later run) gets a new line and the
last line for a canonical URL wins. A torn last line (a crash mid-append) is ignored by
readers and fenced off with a newline by the next writer, so nothing written before it
is lost.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ..contract import InvalidInputError
from ..contract.atomic import atomic_output, write_json_atomic

RECORDS = "fetches.jsonl"
BODIES = "bodies"
FETCH_SUMMARY = "fetch_summary.json"

RobotsDecision = Literal["allowed", "disallowed", "not_checked"]
Outcome = Literal["ok", "failed", "disallowed"]


@dataclass(frozen=True, slots=True)
class FetchRecord:
    """What happened to one URL.

    ``status`` is the final HTTP status (None when no response came back); ``error`` is
    None for a successful fetch, else a short machine-readable reason (``http_404``,
    ``timeout``, ``too_large``, ``too_many_redirects``, ``robots_disallowed`` …);
    ``body`` is the body file's path relative to the crawl directory (successful
    fetches only); ``bytes`` is the body's size before compression.
    """

    url: str
    canonical_url: str
    final_url: str | None
    status: int | None
    content_type: str | None
    bytes: int | None
    fetched_at: str | None
    robots: RobotsDecision
    error: str | None
    body: str | None = None
    attempts: int = 1

    @property
    def outcome(self) -> Outcome:
        """``ok`` (a body is stored), ``disallowed`` (robots.txt) or ``failed``."""
        if self.robots == "disallowed":
            return "disallowed"
        return "ok" if self.error is None and self.body is not None else "failed"

    def to_json(self) -> str:
        """One JSONL line (sorted keys, no trailing newline)."""
        return json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_mapping(cls, obj: dict[str, Any]) -> FetchRecord:
        """Parse a decoded JSON object. Raises ValueError when a field is missing or mistyped."""
        missing = [k for k in _REQUIRED if k not in obj]
        if missing:
            raise ValueError(f"missing field(s) {', '.join(missing)}")
        rec = cls(**{k: obj[k] for k in cls.__dataclass_fields__ if k in obj})
        if not isinstance(rec.url, str) or not isinstance(rec.canonical_url, str):
            raise ValueError("'url' and 'canonical_url' must be strings")
        if rec.robots not in ("allowed", "disallowed", "not_checked"):
            raise ValueError(f"'robots' must be allowed, disallowed or not_checked, not {rec.robots!r}")
        if rec.body is not None and (not isinstance(rec.body, str) or ".." in Path(rec.body).parts):
            raise ValueError("'body' must be a relative path inside the crawl directory")
        return rec


_REQUIRED = ("url", "canonical_url", "final_url", "status", "content_type", "bytes", "fetched_at",
             "robots", "error")


@dataclass(frozen=True, slots=True)
class CrawlRecords:
    """The records of a crawl (last record per canonical URL, in first-seen order) and the
    problems met reading them (``path:line: message``), one per skipped line."""

    records: list[FetchRecord]
    problems: list[str]
    superseded: int


def body_key(canonical_url: str) -> str:
    """The body file name of a URL: stable, filesystem-safe, independent of fetch order."""
    return hashlib.sha256(canonical_url.encode("utf-8")).hexdigest()[:32] + ".gz"


def check_crawl_dir(crawl: Path) -> Path:
    """The records file of a crawl directory. Raises InvalidInputError when the directory or
    its records file is missing or unreadable."""
    if not crawl.is_dir():
        raise InvalidInputError(f"{crawl}: not a crawl directory (it does not exist or is not a directory)")
    path = crawl / RECORDS
    if not os.access(crawl, os.R_OK | os.X_OK) or (path.exists() and not os.access(path, os.R_OK)):
        raise InvalidInputError(f"{crawl}: crawl directory is not readable (permission denied)")
    if not path.is_file():
        raise InvalidInputError(f"{crawl}: no {RECORDS} in this directory (is it a crawl directory?)")
    return path


def _iter_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    for n, line in enumerate(lines, 1):
        if line.strip():
            yield n, line, n == len(lines)  # last and unterminated: possibly torn


def read_records(crawl: str | os.PathLike[str]) -> CrawlRecords:
    """Read a crawl directory's records; bad lines are skipped and reported, never fatal.

    Raises InvalidInputError when the directory or its records file cannot be read.
    """
    path = check_crawl_dir(Path(crawl))
    latest: dict[str, FetchRecord] = {}
    problems: list[str] = []
    seen = 0
    try:
        lines = list(_iter_lines(path))
    except OSError as e:
        raise InvalidInputError(f"{path}: cannot read ({e.strerror})") from e
    for n, line, unterminated in lines:
        try:
            obj = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            what = "an incomplete last line (interrupted write?)" if unterminated else "not valid JSON"
            problems.append(f"{path}:{n}: {what}; skipped")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{path}:{n}: a fetch record must be a JSON object; skipped")
            continue
        try:
            rec = FetchRecord.from_mapping(obj)
        except ValueError as e:
            problems.append(f"{path}:{n}: invalid fetch record ({e}); skipped")
            continue
        seen += 1
        latest.pop(rec.canonical_url, None)  # re-insert: order = last write
        latest[rec.canonical_url] = rec
    return CrawlRecords(list(latest.values()), problems, seen - len(latest))


def read_body(crawl: Path, rec: FetchRecord) -> bytes:
    """The raw body of a successful fetch. Raises OSError (missing/unreadable) or
    gzip.BadGzipFile/EOFError (damaged)."""
    if rec.body is None:
        raise FileNotFoundError(f"{rec.url}: no body stored")
    return gzip.decompress((crawl / rec.body).read_bytes())


class RecordWriter:
    """Appends records to ``fetches.jsonl`` durably (one write + fsync per record) and stores
    bodies atomically. Use as a context manager."""

    def __init__(self, crawl: Path) -> None:
        self.crawl = crawl
        (crawl / BODIES).mkdir(parents=True, exist_ok=True)
        path = crawl / RECORDS
        self._fh = open(path, "ab")  # noqa: SIM115 - closed in close()
        if path.stat().st_size and not _ends_with_newline(path):
            self._fh.write(b"\n")  # fence off a torn line left by a crash

    def store_body(self, canonical_url: str, body: bytes) -> str:
        """Write a body under a temporary name, fsync, rename; returns its relative path."""
        rel = f"{BODIES}/{body_key(canonical_url)}"
        with atomic_output(self.crawl / rel) as fh:
            fh.write(gzip.compress(body, compresslevel=6, mtime=0))
        return rel

    def append(self, rec: FetchRecord) -> None:
        """Append one record line and fsync it."""
        self._fh.write(rec.to_json().encode("utf-8") + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


__all__ = [
    "BODIES",
    "FETCH_SUMMARY",
    "RECORDS",
    "CrawlRecords",
    "FetchRecord",
    "RecordWriter",
    "atomic_output",
    "body_key",
    "check_crawl_dir",
    "read_body",
    "read_records",
    "write_json_atomic",
]
