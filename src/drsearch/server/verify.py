"""Pre-flight checks of a corpus file before serving it (``drsearch serve --verify``).

Levels:

- ``none``: nothing beyond what every worker's ``Engine.open`` checks anyway.
- ``fast`` (default, well under a second at DR-256 scale): the engine opens it
  (SQLite file, application id, schema version, meta and arrays present); the file's
  size equals its page count × page size (not truncated or padded); the recorded
  content identity is a well-formed hash; documents and chunks are counted.
- ``deep``: ``fast`` plus SQLite's ``PRAGMA quick_check`` over every page (minutes on
  a multi-GB file). The release-validation work extends this (hashes against a release
  manifest, the FTS5 integrity check).

Every failure raises a ``CorpusFileError`` with a one-line message naming the file.
"""

from __future__ import annotations

import os
import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..index import BlockList, Engine, IncompatibleIndexError, NotADatabaseError
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


def _sqlite_ro(path: Path) -> sqlite3.Connection:
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True)


def _check_size(path: Path, size: int) -> None:
    try:
        with closing(_sqlite_ro(path)) as conn:
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
    except sqlite3.Error as e:
        raise NotADatabaseError(f"{path}: cannot read page counts ({e})") from e
    if page_size * pages != size:
        raise IncompatibleIndexError(
            f"{path}: file is {size} bytes but its {pages} pages of {page_size} bytes make "
            f"{page_size * pages}: truncated or damaged")


def _quick_check(path: Path) -> None:
    try:
        with closing(_sqlite_ro(path)) as conn:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
    except sqlite3.Error as e:
        raise IncompatibleIndexError(f"{path}: PRAGMA quick_check could not run ({e})") from e
    if rows != ["ok"]:
        raise IncompatibleIndexError(f"{path}: PRAGMA quick_check failed: {'; '.join(rows[:3])}")


def verify_corpus(path: str | os.PathLike[str], level: VerifyLevel = "fast",
                  blocklist: BlockList | None = None) -> CorpusReport:
    """Check ``path`` at ``level`` and describe it. Raises CorpusFileError on any problem.

    Even at ``none`` the engine is opened once (to describe the corpus in the startup log).
    """
    p = Path(path)
    with Engine.open(p, blocklist) as engine:
        meta = engine.meta
        stats = engine.stats()
    size = p.stat().st_size
    report = CorpusReport(p, level, str(meta.get("content_identity", "")),
                          int(meta.get("schema_version", -1)), int(meta.get("documents", 0)),
                          int(meta.get("chunks", 0)), size, int(stats["blocked_documents"]))
    if level == "none":
        return report
    if not _IDENTITY.fullmatch(report.identity):
        raise IncompatibleIndexError(f"{p}: malformed content identity {report.identity[:40]!r}")
    _check_size(p, size)
    if level == "deep":
        _quick_check(p)
    return report


__all__ = ["CorpusReport", "verify_corpus"]
