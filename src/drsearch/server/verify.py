"""Pre-flight checks of a corpus file before serving it (``drsearch serve --verify``).

Levels:

- ``none``: nothing beyond what every worker's ``Engine.open`` checks anyway.
- ``fast`` (default, well under a second at DR-256 scale): the engine opens it
  (SQLite file, application id, schema version, meta and arrays present); the file's
  size equals its page count × page size (not truncated or padded); the recorded
  content identity is a well-formed hash; documents and chunks are counted.
- ``deep``: ``fast`` plus SQLite's ``PRAGMA quick_check`` over every page, FTS5's
  ``integrity-check`` against the content table (about 25 s at DR-256 scale; the file is
  never written: see ``drsearch.index.integrity``), and every document's stored text and
  metadata decoded (a flipped bit in a compressed text passes the first two; its checksum,
  zlib's or drlz's CRC-32, finds it). Hashes against a release manifest are ``drsearch validate``'s job.

Every failure raises a ``CorpusFileError`` with a one-line message naming the file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..contract import DEFAULT_TIME_LIMIT_S, IncompatibleIndexError
from ..index import (
    BlockList,
    Engine,
    ReleasePolicy,
    document_problems,
    fts5_integrity_check,
    header_problems,
    posting_problems,
    quick_check,
    read_sqlite_header,
)
from .settings import VerifyLevel

_IDENTITY = re.compile(r"[0-9a-f]{16,128}")


@dataclass(frozen=True)
class CorpusReport:
    """What was checked, and the corpus identity a server will report."""

    path: Path
    level: VerifyLevel
    identity: str
    schema_version: int
    documents: int
    chunks: int
    file_bytes: int
    blocked_documents: int


def _check_header(path: Path) -> None:
    problems = header_problems(read_sqlite_header(path))
    if problems:
        raise IncompatibleIndexError(f"{path}: {problems[0]}")


def _deep_checks(path: Path) -> None:
    problems = (quick_check(path) or fts5_integrity_check(path) or document_problems(path)
                or posting_problems(path))
    if problems:
        raise IncompatibleIndexError(f"{path}: integrity check failed: {'; '.join(problems[:3])}")


def verify_corpus(path: str | os.PathLike[str], level: VerifyLevel = "fast",
                  blocklist: BlockList | None = None, *,
                  release_blocklist: ReleasePolicy = "apply", require_complete: bool = False) -> CorpusReport:
    """Check ``path`` at ``level`` and describe it. Raises CorpusFileError on any problem,
    and with ``require_complete`` BlocklistError when the blocklist names docids the corpus
    lacks (``Engine.check_blocklist_complete``).

    Even at ``none`` the engine is opened once (to describe the corpus in the startup log),
    and only once: ``drsearch serve`` makes every check of its parent on this one engine.
    """
    engine, report = open_verified(path, level, blocklist, release_blocklist=release_blocklist,
                                   require_complete=require_complete)
    engine.close()
    return report


def open_verified(path: str | os.PathLike[str], level: VerifyLevel = "fast",
                  blocklist: BlockList | None = None, *, release_blocklist: ReleasePolicy = "apply",
                  require_complete: bool = False,
                  time_limit_s: float = DEFAULT_TIME_LIMIT_S) -> tuple[Engine, CorpusReport]:
    """:func:`verify_corpus`, and the engine it checked, left open for the caller (who closes
    it): a single-process ``drsearch serve`` answers on it rather than opening the file again.
    ``time_limit_s``: the engine's per-query limit (``Engine.open``'s). Raises as
    :func:`verify_corpus`, with nothing left open."""
    p = Path(path)
    engine = Engine.open(p, blocklist, release_blocklist=release_blocklist, time_limit_s=time_limit_s)
    try:
        report = _checked(engine, p, level, require_complete and blocklist is not None)
    except BaseException:
        engine.close()
        raise
    return engine, report


def _checked(engine: Engine, p: Path, level: VerifyLevel, require_complete: bool) -> CorpusReport:
    if require_complete:
        engine.check_blocklist_complete()
    meta = engine.meta
    stats = engine.stats()
    if level == "deep":
        _check_header(p)
        _deep_checks(p)
    size = p.stat().st_size
    report = CorpusReport(p, level, str(meta.get("content_identity", "")),
                          int(meta.get("schema_version", -1)), int(meta.get("documents", 0)),
                          int(meta.get("chunks", 0)), size, int(stats["blocked_documents"]))
    if level == "none":
        return report
    if not _IDENTITY.fullmatch(report.identity):
        raise IncompatibleIndexError(f"{p}: malformed content identity {report.identity[:40]!r}")
    _check_header(p)
    return report


__all__ = ["CorpusReport", "open_verified", "verify_corpus"]
