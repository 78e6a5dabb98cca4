"""Import documents from files other tools wrote: any SQLite table, or JSONL.

``inspect_source(path)`` lists a source's tables, their columns and row counts, to help
choose a mapping; ``import_corpus(source, out, mapping)`` rebuilds a frozen drsearch
index from it with the engine's own build (same 800/700-word chunking, same bytes for the
same documents). SQLite sources are opened read-only; table and column names are checked
against the source's schema before use and always quoted, values are never formatted into
SQL. Bad values (NULL, a BLOB or number where text is expected) stop the import with a
message naming the table, row and column: a silently skipped document would change the
corpus without anyone noticing.

The index records where it came from in ``meta`` key ``provenance`` (docs/RELEASE.md):
the source file's name, format, size and SHA-256, the table/column mapping, and, when the
caller's ``identify`` recognises the source's SHA-256 and size (the CLI passes the pinned
release identities, e.g. DR-256 v1.1.0's corpus file), ``derived_from`` with that
release's name and revision.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import apsw

from ..index import (
    BuildReport,
    BuildSettings,
    InvalidDocumentError,
    InvalidInputError,
    NotADatabaseError,
    SourcedDoc,
    build,
    read_jsonl,
    sha256_file,
)
from ..index.integrity import SQLITE_MAGIC
from ..index.schema import APPLICATION_ID as _DRSEARCH_APPLICATION_ID

SourceFormat = Literal["sqlite", "jsonl"]
_RESERVED = ("docid", "url", "title", "text", "aliases")
_SQL_TYPES = {int: "INTEGER", float: "REAL", bytes: "BLOB", type(None): "NULL", str: "TEXT"}
_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number",
               float: "number", type(None): "null"}


@dataclass(frozen=True)
class ColumnInfo:
    """One column: its name, declared type (JSONL: the JSON types seen) and primary-key flag."""

    name: str
    type: str
    primary_key: bool = False


@dataclass(frozen=True)
class TableInfo:
    """A table (or view) of a source with its columns and row count."""

    name: str
    kind: str
    columns: list[ColumnInfo]
    rows: int | None


@dataclass(frozen=True)
class SourceInfo:
    """What ``--inspect`` prints. ``note`` flags e.g. a file that already is a drsearch index."""

    path: str
    format: SourceFormat
    tables: list[TableInfo]
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ColumnMapping:
    """Which table and columns of a SQLite source hold the documents' fields.

    ``title`` may be None (empty titles); ``metadata`` columns become document metadata
    under their own names (NULL → null).
    """

    table: str
    docid: str
    url: str
    text: str
    title: str | None = None
    metadata: tuple[str, ...] = field(default_factory=tuple)

    def fields(self) -> list[tuple[str, str]]:
        """(document field, source column) pairs in SELECT order."""
        pairs = [("docid", self.docid), ("url", self.url), ("text", self.text)]
        if self.title is not None:
            pairs.append(("title", self.title))
        return pairs + [(m, m) for m in self.metadata]


def quote_identifier(name: str) -> str:
    """A SQLite identifier in double quotes, inner quotes doubled (any name is safe)."""
    if "\x00" in name:
        raise InvalidInputError("an SQL identifier cannot contain a NUL character")
    return '"' + name.replace('"', '""') + '"'


def detect_format(path: str | os.PathLike[str]) -> SourceFormat:
    """``sqlite`` if the file starts with the SQLite header, else ``jsonl``.

    Raises InvalidInputError if the file is missing or unreadable.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as e:
        raise InvalidInputError(f"cannot read {path}: {e.strerror}") from e
    return "sqlite" if head == SQLITE_MAGIC else "jsonl"


def _connect(path: Path) -> apsw.Connection:
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro"
    try:
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        conn.execute("PRAGMA query_only=1")
        conn.execute("SELECT count(*) FROM sqlite_schema").get  # noqa: B018 - forces a read
    except apsw.Error as e:
        raise NotADatabaseError(f"{path}: cannot read as SQLite ({e})") from e
    return conn


def _tables(conn: apsw.Connection) -> dict[str, str]:
    """name → kind ("table", "view" or "virtual table") of every user table and view."""
    rows = conn.execute(
        "SELECT name, type, sql FROM sqlite_schema WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
    return {name: ("virtual table" if kind == "table" and str(sql or "").upper().startswith(
        "CREATE VIRTUAL") else kind) for name, kind, sql in rows}


def _columns(conn: apsw.Connection, table: str) -> list[ColumnInfo]:
    rows = conn.execute("SELECT name, type, pk FROM pragma_table_xinfo(?) WHERE hidden = 0", (table,))
    return [ColumnInfo(name, declared or "", bool(pk)) for name, declared, pk in rows]


def _inspect_sqlite(path: Path) -> SourceInfo:
    conn = _connect(path)
    try:
        note = ""
        if conn.execute("PRAGMA application_id").get == _DRSEARCH_APPLICATION_ID:
            note = "this file already is a drsearch index: serve or validate it directly"
        tables = []
        for name, kind in _tables(conn).items():
            try:
                rows = conn.execute(f"SELECT count(*) FROM {quote_identifier(name)}").get
                columns = _columns(conn, name)
            except apsw.Error:  # e.g. a virtual table whose module this SQLite lacks
                rows, columns = None, []
            tables.append(TableInfo(name, kind, columns, rows))
    finally:
        conn.close()
    return SourceInfo(str(path), "sqlite", tables, note)


def _inspect_jsonl(path: Path) -> SourceInfo:
    keys: dict[str, set[str]] = defaultdict(set)
    present: Counter[str] = Counter()
    rows = 0
    for doc in read_jsonl(path):
        rows += 1
        for key, value in doc.items():
            present[key] += 1
            keys[key].add(_JSON_TYPES.get(type(value), "other"))
    columns = [ColumnInfo(k, "|".join(sorted(keys[k])) + ("" if present[k] == rows else
                                                          f" (in {present[k]} of {rows} rows)"))
               for k in sorted(keys)]
    return SourceInfo(str(path), "jsonl", [TableInfo("(lines)", "jsonl", columns, rows)])


def inspect_source(path: str | os.PathLike[str]) -> SourceInfo:
    """The tables, columns and row counts of a SQLite file, or the keys of a JSONL file.

    Raises InvalidInputError (unreadable file, invalid JSON line) or NotADatabaseError.
    """
    p = Path(path)
    return _inspect_sqlite(p) if detect_format(p) == "sqlite" else _inspect_jsonl(p)


def _resolve(names: list[str], wanted: str, what: str, where: str) -> str:
    """``wanted`` as the source spells it (SQLite names are case-insensitive)."""
    if wanted in names:
        return wanted
    folded = [n for n in names if n.casefold() == wanted.casefold()]
    if len(folded) == 1:
        return folded[0]
    known = ", ".join(repr(n) for n in names[:20]) or "none"
    raise InvalidInputError(f"{where}: no {what} {wanted!r} (has: {known})")


def check_mapping(conn: apsw.Connection, mapping: ColumnMapping, where: str) -> ColumnMapping:
    """The mapping with names resolved against the source's schema.

    Raises InvalidInputError for an unknown table or column, a metadata column that
    reuses a document field's name, or a column mapped twice.
    """
    table = _resolve(list(_tables(conn)), mapping.table, "table or view", where)
    columns = [c.name for c in _columns(conn, table)]
    at = f"{where} table {table!r}"

    def col(name: str) -> str:
        return _resolve(columns, name, "column", at)

    reserved = [m for m in mapping.metadata if m in _RESERVED]
    if reserved:
        raise InvalidInputError(f"metadata column {reserved[0]!r} clashes with a document field name")
    resolved = ColumnMapping(table, col(mapping.docid), col(mapping.url), col(mapping.text),
                             None if mapping.title is None else col(mapping.title),
                             tuple(col(m) for m in mapping.metadata))
    if len(set(resolved.metadata)) != len(resolved.metadata):
        raise InvalidInputError("a metadata column is given twice")
    return resolved


def _text(value: object, column: str, where: str, docid: bool = False) -> str:
    if isinstance(value, str):
        return value
    if docid and isinstance(value, int):
        return str(value)  # integer keys are common and convert losslessly
    if value is None:
        raise InvalidDocumentError(f"{where}: column {column!r} is NULL")
    kind = _SQL_TYPES.get(type(value), type(value).__name__)
    size = f" of {len(value)} bytes" if isinstance(value, bytes) else ""
    raise InvalidDocumentError(f"{where}: column {column!r} holds {kind}{size}, expected text")


def _metadata_value(value: object, column: str, where: str) -> object:
    if isinstance(value, bytes):
        raise InvalidDocumentError(f"{where}: metadata column {column!r} holds a BLOB")
    return value


def read_sqlite_documents(path: str | os.PathLike[str], mapping: ColumnMapping) -> Iterator[dict[str, Any]]:
    """Documents from a SQLite table or view, one per row, in the source's order.

    Raises InvalidInputError (unknown table/column), NotADatabaseError, and
    InvalidDocumentError for the first row with a NULL, BLOB or non-text value.
    """
    p = Path(path)
    conn = _connect(p)
    try:
        m = check_mapping(conn, mapping, p.name)
        fields = m.fields()
        cols = ", ".join(quote_identifier(c) for _, c in fields)
        sql = f"SELECT {cols} FROM {quote_identifier(m.table)}"
        for n, row in enumerate(conn.execute(sql), 1):
            where = f"{p.name} table {m.table!r} row {n}"
            values = dict(zip((f for f, _ in fields), row, strict=True))
            doc: dict[str, Any] = {"docid": _text(values["docid"], m.docid, where, docid=True)}
            where += f" (docid {doc['docid']!r})"
            for name, column in fields[1:]:
                is_meta = name in m.metadata
                doc[name] = (_metadata_value(values[name], column, where) if is_meta
                             else _text(values[name], column, where))
            yield SourcedDoc(doc, where)
    except apsw.Error as e:
        raise NotADatabaseError(f"{p}: reading documents failed ({e})") from e
    finally:
        conn.close()


Identify = Callable[[str, int], Mapping[str, Any] | None]


def resolve_mapping(path: str | os.PathLike[str], mapping: ColumnMapping) -> ColumnMapping:
    """``mapping`` with its table and column names as the SQLite file at ``path`` spells them.

    Raises InvalidInputError (unknown or clashing names) and NotADatabaseError.
    """
    p = Path(path)
    conn = _connect(p)
    try:
        return check_mapping(conn, mapping, p.name)
    finally:
        conn.close()


def source_provenance(
    source: str | os.PathLike[str],
    mapping: ColumnMapping | None,
    identify: Identify | None = None,
    hash_progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """What ``import_corpus`` records in the index's ``meta`` key ``provenance``.

    ``{"method": "drsearch import", "source": {"name", "format", "bytes", "sha256"},
    "mapping": {"table", "docid", "url", "title", "text", "metadata"} (null for JSONL),
    "derived_from": identify(sha256, bytes)}`` (``derived_from`` only when ``identify``
    recognises the source). ``name`` is the file name without its directory, so the same
    source gives the same bytes wherever it lies. Raises InvalidInputError if the source
    cannot be read.
    """
    p = Path(source)
    fmt = detect_format(p)
    try:
        size = p.stat().st_size
        digest = sha256_file(p, hash_progress)
    except OSError as e:
        raise InvalidInputError(f"cannot read {source}: {e.strerror}") from e
    resolved = None if mapping is None else resolve_mapping(p, mapping)
    record: dict[str, Any] = {
        "method": "drsearch import",
        "source": {"name": p.name, "format": fmt, "bytes": size, "sha256": digest},
        "mapping": None if resolved is None else {
            "table": resolved.table, "docid": resolved.docid, "url": resolved.url,
            "title": resolved.title, "text": resolved.text, "metadata": list(resolved.metadata)},
    }
    release = identify(digest, size) if identify is not None else None
    if release is not None:
        record["derived_from"] = dict(release)
    return record


def _stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def import_corpus(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    mapping: ColumnMapping | None = None,
    settings: BuildSettings | None = None,
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
    identify: Identify | None = None,
    hash_progress: Callable[[int], None] | None = None,
) -> BuildReport:
    """Build a frozen index at ``out`` from a SQLite table (``mapping`` required) or JSONL.

    Same guarantees as :func:`drsearch.index.build` (nothing is left at ``out`` on error).
    The index's ``meta`` records the source (:func:`source_provenance`; the source is
    hashed first, ``hash_progress(n)`` per block read, and ``identify(sha256, bytes)``
    may name the release it is). Raises InvalidInputError for a missing or superfluous
    mapping, a source with no documents or one that changed while it was read, plus the errors of
    :func:`read_sqlite_documents`, :func:`drsearch.index.read_jsonl` and ``build``.
    """
    fmt = detect_format(source)
    if fmt == "sqlite":
        if mapping is None:
            raise InvalidInputError(f"{source} is SQLite: give --table, --docid-col, --url-col and "
                                    "--text-col (see --inspect)")
        docs: Iterator[dict[str, Any]] = read_sqlite_documents(source, mapping)
    else:
        if mapping is not None:
            raise InvalidInputError(f"{source} is JSONL: table and column options apply to SQLite sources")
        docs = read_jsonl(source)
    before = _stamp(Path(source))
    first = next(docs, None)  # before anything is hashed or written (an existing --out survives)
    if first is None:
        what = f"table {mapping.table!r}" if mapping is not None else "the file"
        raise InvalidInputError(f"{source}: {what} holds no documents, nothing to import (see --inspect)")
    docs = itertools.chain([first], docs)
    provenance = source_provenance(source, mapping, identify, hash_progress)
    report = build(docs, out, settings, overwrite=overwrite, progress=progress, provenance=provenance)
    if _stamp(Path(source)) != before:  # the recorded hash may not describe what was read
        Path(out).unlink(missing_ok=True)
        raise InvalidInputError(f"{source} changed while it was imported: {out} removed, import again")
    return report


__all__ = [
    "ColumnInfo",
    "ColumnMapping",
    "SourceInfo",
    "TableInfo",
    "check_mapping",
    "detect_format",
    "import_corpus",
    "inspect_source",
    "quote_identifier",
    "read_sqlite_documents",
    "resolve_mapping",
    "source_provenance",
]
