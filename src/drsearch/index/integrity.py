"""Integrity checks of a frozen index file that never write to it.

- :func:`read_sqlite_header` parses the 100-byte SQLite header straight from the file
  (page size, page count, application id, schema version) without opening SQLite, so a
  truncated or padded file is caught in microseconds whatever its size.
- :func:`sha256_file` streams a file through SHA-256 in large blocks (at the speed of the
  disk or of SHA-256 itself, whichever is slower), reporting progress.
- :func:`quick_check` runs ``PRAGMA quick_check`` on a read-only, immutable connection.
  Both it and the FTS5 check take a ``progress(n)`` callback, called as work is done
  (every :data:`PROGRESS_STEPS` SQLite virtual-machine steps; the FTS5 check, which works
  mostly in C, also per MB read). These checks run for seconds on a multi-GB file and
  have no natural total, so callers show activity and elapsed time.
- :func:`fts5_integrity_check` runs FTS5's ``integrity-check`` command. SQLite only runs
  that ``INSERT`` on a connection it believes writable, so it is run through a VFS that
  opens the file with the operating system's read-only flag while telling SQLite the
  file is writable, refuses every write, truncate, sync, journal and delete, and the
  transaction is rolled back. The file's bytes and mtime cannot change (tested).
- :func:`missing_docids` lists docids that a file does not hold.

Problems are returned as lists of one-line messages (empty = the check passed); only an
unreadable or non-SQLite file raises (``NotADatabaseError``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw
import numpy as np

from ..contract.errors import NotADatabaseError
from . import chunktext
from .listcodes import RAW_WIDTH, layout_problem, list_bytes, rowids_at, table_problem
from .schema import APPLICATION_ID, READABLE_VERSIONS, has_list_codes

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100
HASH_BLOCK_BYTES = 8 << 20
PROGRESS_STEPS = 100_000  # about one call per MB that quick_check reads (measured)
_MAX_PROBLEMS = 20
_FTS5_DDL = re.compile(r"\s*CREATE\s+VIRTUAL\s+TABLE\s.*?\bUSING\s+fts5\b", re.I | re.S)


@dataclass(frozen=True, slots=True)
class SQLiteHeader:
    """The fields of a SQLite file header that integrity checks need (big-endian on disk)."""

    file_bytes: int
    page_size: int
    page_count: int
    change_counter: int
    version_valid_for: int
    text_encoding: int
    user_version: int
    application_id: int

    @property
    def page_count_valid(self) -> bool:
        """SQLite trusts the in-header page count only when these two counters agree."""
        return self.page_count > 0 and self.change_counter == self.version_valid_for

    @property
    def expected_bytes(self) -> int:
        """The file size the header implies (page size × page count)."""
        return self.page_size * self.page_count


def read_sqlite_header(path: str | os.PathLike[str]) -> SQLiteHeader:
    """Parse the header of the SQLite file at ``path`` (reads 100 bytes, opens no SQLite).

    Raises NotADatabaseError if the file is missing, unreadable, shorter than a header
    or lacks the SQLite magic string.
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(HEADER_BYTES)
            size = os.fstat(fh.fileno()).st_size
    except OSError as e:
        raise NotADatabaseError(f"{p}: cannot read ({e.strerror})") from e
    if len(raw) < HEADER_BYTES or not raw.startswith(SQLITE_MAGIC):
        raise NotADatabaseError(f"{p}: not a SQLite file (no SQLite header)")
    (page_size,) = struct.unpack_from(">H", raw, 16)
    change_counter, page_count = struct.unpack_from(">II", raw, 24)
    encoding, user_version = struct.unpack_from(">II", raw, 56)
    (application_id,) = struct.unpack_from(">I", raw, 68)
    (valid_for,) = struct.unpack_from(">I", raw, 92)
    return SQLiteHeader(
        file_bytes=size,
        page_size=65536 if page_size == 1 else page_size,
        page_count=page_count,
        change_counter=change_counter,
        version_valid_for=valid_for,
        text_encoding=encoding,
        user_version=user_version,
        application_id=application_id,
    )


def header_problems(header: SQLiteHeader, *, drsearch: bool = True) -> list[str]:
    """What is wrong with a drsearch index's header: [] if nothing.

    Checks the application id and schema version this drsearch reads (skipped when
    ``drsearch`` is false: a file another tool wrote), and that the file size equals page
    size × page count (a truncated or padded file fails).
    """
    problems = []
    if drsearch and header.application_id != APPLICATION_ID:
        problems.append(f"application_id {header.application_id:#x}, expected {APPLICATION_ID:#x}")
    if drsearch and header.user_version not in READABLE_VERSIONS:
        problems.append(f"schema version (user_version) {header.user_version}, expected one of "
                        f"{', '.join(map(str, READABLE_VERSIONS))}")
    if not header.page_count_valid:
        problems.append("the header's page count is not valid (file written by a very old SQLite?)")
    elif header.expected_bytes != header.file_bytes:
        problems.append(
            f"file is {header.file_bytes:,} bytes but its header describes {header.page_count:,} pages of "
            f"{header.page_size:,} bytes = {header.expected_bytes:,} bytes (truncated or padded)")
    return problems


def sha256_file(
    path: str | os.PathLike[str],
    progress: Callable[[int], None] | None = None,
    block_bytes: int = HASH_BLOCK_BYTES,
) -> str:
    """The hex SHA-256 of a file, read in ``block_bytes`` blocks; ``progress(n)`` per block.

    One buffer, no copies: the rate is SHA-256's on one core (hashlib/OpenSSL) or the
    disk's, whichever is lower. (A reader thread overlapping I/O and hashing measured no
    faster here, where reads outrun SHA-256: docs/RELEASE.md.) Raises OSError if the file
    cannot be read.
    """
    digest = hashlib.sha256()
    buf = bytearray(block_bytes)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as fh:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        while n := fh.readinto(buf):
            digest.update(view[:n])
            if progress is not None:
                progress(n)
    return digest.hexdigest()


def _connect_ro(path: Path) -> apsw.Connection:
    if not path.is_file():
        raise NotADatabaseError(f"{path}: no such file")
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro&immutable=1"
    try:
        return apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except apsw.Error as e:
        raise NotADatabaseError(f"{path}: cannot open ({e})") from e


def _watch(conn: apsw.Connection, progress: Callable[[int], None] | None) -> None:
    """Call ``progress(PROGRESS_STEPS)`` every PROGRESS_STEPS VM steps on ``conn``."""
    if progress is None:
        return
    steps = PROGRESS_STEPS

    def tick() -> bool:
        progress(steps)
        return False  # True would interrupt the statement

    conn.set_progress_handler(tick, steps)


def quick_check(path: str | os.PathLike[str], progress: Callable[[int], None] | None = None) -> list[str]:
    """``PRAGMA quick_check`` on a read-only immutable connection: [] if the file is sound.

    Otherwise up to 20 one-line problems (SQLite's own, or the error that stopped the
    check). ``progress(n)`` is told every ``n`` VM steps done (:data:`PROGRESS_STEPS`).
    Raises NotADatabaseError only if the file cannot be opened at all.
    """
    conn = _connect_ro(Path(path))
    _watch(conn, progress)
    try:
        rows = [str(r[0]) for r in conn.execute(f"PRAGMA quick_check({_MAX_PROBLEMS})")]
    except apsw.Error as e:
        return [f"quick_check stopped: {e.__class__.__name__}: {e}"]
    finally:
        conn.close()
    return [] if rows == ["ok"] else rows


def document_problems(path: str | os.PathLike[str], limit: int = 3) -> list[str]:
    """Every document's text (deflate + UTF-8) and metadata (JSON) decoded, on a read-only
    immutable connection: [] if all decode, else up to ``limit`` one-line problems (or the
    SQLite error that stopped the scan). Raises NotADatabaseError only if the file cannot be
    opened at all."""
    problems: list[str] = []
    conn = _connect_ro(Path(path))
    try:
        rows = conn.execute(
            "SELECT d.docid, t.text, d.metadata FROM documents AS d JOIN doc_texts AS t ON t.id = d.id")
        for docid, text, metadata in rows:
            try:
                chunktext.unpack_text(text)
                json.loads(metadata)
            except (zlib.error, TypeError, UnicodeDecodeError, ValueError) as e:
                problems.append(f"document {str(docid)[:80]!r}: {e.__class__.__name__}: {e}")
                if len(problems) >= limit:
                    break
    except apsw.Error as e:
        problems.append(f"{e.__class__.__name__}: {e}")
    finally:
        conn.close()
    return problems


def posting_problems(path: str | os.PathLike[str], limit: int = 3) -> list[str]:
    """Every sparse term's posting list checked against its ``terms`` row, on a read-only
    immutable connection: its layout (schema 5: code width and table size, listcodes.py), its
    BLOB's length, a coded list's table strictly ascending, its every code within the table and
    its padding zero, and its rowids ascending within the chunks. [] if all are sound, else up
    to ``limit`` one-line problems naming the term (or the SQLite error that stopped the scan).
    Raises NotADatabaseError only if the file cannot be opened at all."""
    problems: list[str] = []
    conn = _connect_ro(Path(path))
    try:
        version = int(conn.execute("PRAGMA user_version").get)
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        bp = int(json.loads(meta["block_postings"])) if "block_postings" in meta else None
        n_rows = int(json.loads(meta.get("chunks", "0")))
        codes = "t.width, t.n_table" if has_list_codes(version) else f"{RAW_WIDTH}, 0"
        rows = conn.execute(f"SELECT t.term, t.df, {codes}, p.data FROM terms AS t LEFT JOIN postings AS p "
                            "ON p.id = t.id WHERE t.dense = 0")
        for term, df, width, n_table, data in rows:
            problem = _list_problem(df, width, n_table, data, bp, n_rows)
            if problem is not None:
                problems.append(f"the posting list of {str(term)[:80]!r}: {problem}")
                if len(problems) >= limit:
                    break
    except (apsw.Error, KeyError, ValueError) as e:
        problems.append(f"{e.__class__.__name__}: {e}")
    finally:
        conn.close()
    return problems


def _list_problem(df: int, width: int, n_table: int, data: Any, bp: int | None, n_rows: int) -> str | None:
    """What is wrong with one sparse list (None: nothing)."""
    bad = layout_problem(df, width, n_table)
    if bad is not None:
        return f"its terms row is damaged ({bad})"
    if not isinstance(data, bytes):
        return "no postings row"
    want = list_bytes(df, width, n_table, bp)
    if len(data) != want:
        return f"{len(data)} bytes, its terms row says {want}"
    bad = table_problem(data, df, width, n_table)
    if bad is not None:
        return bad
    ids = np.frombuffer(data, "<u4", df, rowids_at(df, width, n_table)).astype(np.int64)
    if df and (int(ids[0]) < 1 or int(ids[-1]) > n_rows or bool(np.any(ids[1:] <= ids[:-1]))):
        return "its rowids are not ascending within the chunks"
    return None


# -- FTS5 integrity-check through a read-only VFS ------------------------------------------

_VFS_NAME = "drsearch-readonly"
_vfs_lock = threading.Lock()
_vfs: list[apsw.VFS] = []  # keeps the registered VFS alive
_opening = threading.local()  # .progress: the callback for the file being opened in this thread
_READ_REPORT_BYTES = 1 << 20


class _ReadOnlyFile(apsw.VFSFile):
    """The main database file, opened O_RDONLY by the OS but reported writable to SQLite."""

    def __init__(self, base: str, name: Any, flags: list[int]) -> None:
        wanted = flags[0]
        if not wanted & apsw.SQLITE_OPEN_MAIN_DB:
            raise apsw.CantOpenError("read-only check: refusing to open a journal or side file")
        writable = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        flags[0] = (wanted & ~writable) | apsw.SQLITE_OPEN_READONLY
        super().__init__(base, name, flags)
        flags[1] = (flags[1] & ~apsw.SQLITE_OPEN_READONLY) | apsw.SQLITE_OPEN_READWRITE

    def xWrite(self, data: bytes, offset: int) -> None:
        raise apsw.ReadOnlyError("read-only check: write refused")

    def xTruncate(self, newsize: int) -> None:
        raise apsw.ReadOnlyError("read-only check: truncate refused")

    def xSync(self, flags: int) -> None:
        raise apsw.ReadOnlyError("read-only check: sync refused")


class _CountingReadOnlyFile(_ReadOnlyFile):
    """A :class:`_ReadOnlyFile` that reports bytes read: FTS5's integrity-check does its
    work in C (blob reads), so SQLite's VM-step progress handler hardly fires during it."""

    def __init__(self, base: str, name: Any, flags: list[int], progress: Callable[[int], None]) -> None:
        super().__init__(base, name, flags)
        self._progress = progress
        self._pending = 0

    def xRead(self, amount: int, offset: int) -> bytes:
        data: bytes = super().xRead(amount, offset)
        self._pending += amount
        if self._pending >= _READ_REPORT_BYTES:
            self._progress(self._pending)
            self._pending = 0
        return data


class _ReadOnlyVFS(apsw.VFS):
    def __init__(self, name: str, base: str) -> None:
        self._base = base
        super().__init__(name, base)

    def xOpen(self, name: Any, flags: list[int]) -> _ReadOnlyFile:
        progress = getattr(_opening, "progress", None)
        if progress is not None and flags[0] & apsw.SQLITE_OPEN_MAIN_DB:
            return _CountingReadOnlyFile(self._base, name, flags, progress)
        return _ReadOnlyFile(self._base, name, flags)

    def xDelete(self, name: str, syncdir: bool) -> None:
        raise apsw.ReadOnlyError("read-only check: delete refused")


def _readonly_vfs() -> str:
    """Register the read-only VFS on first use (never at import time); returns its name."""
    with _vfs_lock:
        if not _vfs:
            # unix-none: no POSIX locks (a write lock on an O_RDONLY descriptor would fail)
            base = "unix-none" if "unix-none" in apsw.vfs_names() else apsw.vfs_names()[0]
            _vfs.append(_ReadOnlyVFS(_VFS_NAME, base))
    return _VFS_NAME


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def fts5_tables(path: str | os.PathLike[str]) -> list[str]:
    """The names of the FTS5 tables in a SQLite file, sorted (read-only, immutable).

    Raises NotADatabaseError if the file is missing, not SQLite or its schema unreadable.
    """
    p = Path(path)
    read_sqlite_header(p)
    conn = _connect_ro(p)
    try:
        rows = conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        return [str(name) for name, sql in rows
                if _FTS5_DDL.match(str(sql or "")) is not None]
    except apsw.Error as e:
        raise NotADatabaseError(f"cannot read the schema of {p.name}: {e}") from e
    finally:
        conn.close()


def fts5_integrity_check(path: str | os.PathLike[str], table: str | None = "chunks_fts",
                         progress: Callable[[int], None] | None = None) -> list[str]:
    """FTS5's ``integrity-check`` (rank 1: the index is also compared with its content table).

    ``table=None`` checks every FTS5 table the file holds (none: nothing to check, []),
    e.g. in a file another tool built. Returns [] if the index is consistent, otherwise
    one-line problems. Runs in a transaction that is rolled back, on a connection whose
    file the OS opened read-only (see the module docstring), so the file is never
    modified, even if it is writable. ``progress(n)`` is told of work done: VM steps as
    for :func:`quick_check`, and bytes read from the file (per MB). Raises
    NotADatabaseError if the file is missing or not SQLite.
    """
    p = Path(path)
    try:
        tables = fts5_tables(p)
    except NotADatabaseError as e:
        read_sqlite_header(p)  # re-raises for a missing file or one that is not SQLite at all
        return [e.message]
    if table is not None:
        if table not in tables:
            return [f"no FTS5 table {table!r} in {p.name}"]
        tables = [table]
    vfs = _readonly_vfs()
    _opening.progress = progress
    try:
        conn = apsw.Connection(str(p.resolve()), flags=apsw.SQLITE_OPEN_READWRITE, vfs=vfs)
    except apsw.Error as e:
        return [f"FTS5 integrity-check could not open the file: {e}"]
    finally:
        _opening.progress = None
    _watch(conn, progress)
    chunktext.register(conn)  # a version-4 index's FTS5 content is the chunk_texts view, which calls it
    try:
        conn.execute("PRAGMA temp_store=MEMORY")
        return [problem for name in tables if (problem := _fts5_check_one(conn, name))]
    finally:
        conn.close()


def _fts5_check_one(conn: apsw.Connection, table: str) -> str | None:
    try:
        conn.execute("BEGIN")
        try:
            conn.execute(f"INSERT INTO {_quote_ident(table)}({_quote_ident(table)}, rank) "
                         "VALUES('integrity-check', 1)")
        finally:
            conn.execute("ROLLBACK")
    except apsw.Error as e:
        return f"FTS5 integrity-check of {table}: {e.__class__.__name__}: {e}"
    except ValueError as e:  # drsearch_chunk_text's: a version-4 chunk's text does not decode
        return f"FTS5 integrity-check of {table}: a chunk's text cannot be read: {e}"
    return None


def missing_docids(path: str | os.PathLike[str], docids: Iterable[str]) -> list[str]:
    """The given docids that the index at ``path`` does not hold, sorted.

    Reads the ``documents`` table on a read-only immutable connection. Raises
    NotADatabaseError if the file cannot be opened or has no ``documents`` table.
    """
    p = Path(path)
    conn = _connect_ro(p)
    try:
        rows = conn.execute(
            "SELECT value FROM json_each(?) WHERE value NOT IN (SELECT docid FROM documents)",
            (json.dumps(sorted(set(docids))),))
        return sorted(str(r[0]) for r in rows)
    except apsw.Error as e:
        raise NotADatabaseError(f"{p}: cannot read documents ({e})") from e
    finally:
        conn.close()


__all__ = [
    "PROGRESS_STEPS",
    "SQLiteHeader",
    "fts5_integrity_check",
    "fts5_tables",
    "header_problems",
    "missing_docids",
    "posting_problems",
    "quick_check",
    "read_sqlite_header",
    "sha256_file",
]
