"""Import documents from files other tools wrote: any SQLite table, or JSONL.

``inspect_source(path)`` lists a source's tables, their columns and row counts, to help
choose a mapping; ``import_corpus(source, out, mapping)`` rebuilds a frozen drsearch
index from it with the engine's own build (same 800/700-word chunking, same bytes for the
same documents). SQLite sources are opened read-only; table and column names are checked
against the source's schema before use and always quoted, values are never formatted into
SQL. Bad values (NULL, a BLOB or number where text is expected) stop the import with a
message naming the table, row and column: a silently skipped document would change the
corpus without anyone noticing.

When the source holds an FTS5 table of chunks (DR-256's own corpus file is such a
search database), the import is a drop-in for the server that searched it: exactly those
chunks (text, order, the document each belongs to) become the index's chunks, and the
tokenizer its ``CREATE VIRTUAL TABLE`` names becomes the index's (unless the caller's
settings name one), so our ranking equals that table's own ``bm25()`` ``ORDER BY rank``
grouped per document. A source whose FTS5 ranking we could not reproduce (several scored
columns, ``detail`` other than ``full``, a custom ``rank``, no stored text) is refused with
the reason; ``chunks=None`` (the CLI's ``--rechunk``) chunks the documents 800/700 instead.

The index records where it came from in ``meta`` key ``provenance`` (docs/RELEASE.md):
the source file's name, format, size and SHA-256, the table/column mapping, the chunk
table and tokenizer when chunks were imported, and, when the caller's ``identify``
recognises the source's SHA-256 and size (the CLI passes the pinned release identities,
e.g. DR-256 v1.1.0's corpus file), ``derived_from`` with that release's name and revision.
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
from pydantic import ValidationError

from ..contract import InvalidDocumentError, InvalidInputError, NotADatabaseError
from ..index import BuildReport, BuildSettings, SourceChunk, SourcedDoc, build, read_jsonl, sha256_file
from ..index.fts5spec import Fts5Table, parse_fts5_table
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
    """A table (or view) of a source with its columns and row count; for an FTS5 table
    also its declaration (``fts5``: tokenize, indexed and unindexed columns, options), which
    decides whether ``drsearch import`` can take it over as the chunks."""

    name: str
    kind: str
    columns: list[ColumnInfo]
    rows: int | None
    fts5: dict[str, Any] | None = None


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


@dataclass(frozen=True)
class ChunkMapping:
    """Which FTS5 table of a SQLite source holds the chunks, and which of its columns (or of
    its external-content table's) names each chunk's document.

    ``table`` None: the source's only FTS5 table. ``docid`` None: a column spelled like the
    documents' docid column. The chunk text is the table's one indexed column; chunk order
    is its rowid.
    """

    table: str | None = None
    docid: str | None = None


@dataclass(frozen=True)
class ResolvedChunks:
    """A chunk source checked against the file: what ``provenance.chunks`` records."""

    table: str
    docid: str
    text: str
    rowid: str
    content: str | None  # the external-content table read, or None (the FTS5 table itself)
    tokenizer: str  # the FTS5 ``tokenize`` value the table declares (FTS5's default: unicode61)

    def record(self, rows: int) -> dict[str, Any]:
        return {"table": self.table, "docid": self.docid, "text": self.text, "order": self.rowid,
                "content": self.content, "rows": rows}


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
        declared = fts5_declarations(conn)
        for name, kind in _tables(conn).items():
            try:
                rows = conn.execute(f"SELECT count(*) FROM {quote_identifier(name)}").get
                columns = _columns(conn, name)
            except apsw.Error:  # e.g. a virtual table whose module this SQLite lacks
                rows, columns = None, []
            fts = declared.get(name)
            about = None if fts is None else {
                "tokenize": fts.tokenize, "indexed": fts.indexed,
                "unindexed": [c.name for c in fts.columns if c.unindexed],
                "options": dict(sorted(fts.options.items()))}
            tables.append(TableInfo(name, kind, columns, rows, about))
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


def fts5_declarations(conn: apsw.Connection) -> dict[str, Fts5Table]:
    """Every FTS5 table of a SQLite file, parsed from its ``CREATE VIRTUAL TABLE``."""
    out = {}
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND "
                                  "sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"):
        table = parse_fts5_table(name, str(sql))
        if table is not None:
            out[name] = table
    return out


def _document_link(conn: apsw.Connection, fts: Fts5Table, name: str) -> tuple[str, str | None] | str:
    """The column naming each chunk's document, spelled as the source does, and the
    external-content table it is in (None: the FTS5 table's own column); or why none does."""
    own = [c.name for c in fts.columns]
    if name in own or len([c for c in own if c.casefold() == name.casefold()]) == 1:
        return _resolve(own, name, "column", fts.name), None
    content = fts.options.get("content")
    if not content:
        return f"no column {name!r} naming each chunk's document (has: {', '.join(map(repr, own))})"
    try:
        table = _resolve(list(_tables(conn)), content, "content table", fts.name)
        columns = [c.name for c in _columns(conn, table)]
        return _resolve(columns, name, "column", f"content table {table!r}"), table
    except InvalidInputError as e:
        return f"no column {name!r} naming each chunk's document ({e.message})"


def resolve_chunks(conn: apsw.Connection, wanted: ChunkMapping, docs: ColumnMapping,
                   where: str) -> ResolvedChunks | None:
    """The chunk source ``wanted`` names, checked; None if none was named and no FTS5 table
    of the source has a column naming each chunk's document (``wanted.docid``, default the
    documents' docid column name; in the table or its external-content table).

    Raises InvalidInputError when the choice is ambiguous (several such tables), for a
    named table that has no such column, or when the table's ranking could not be
    reproduced exactly: more than one indexed column (bm25() would sum over them),
    ``detail`` other than ``full`` (bm25() would not see term frequencies), a contentless
    table (no text to import), or a custom ``rank``.
    """
    tables = fts5_declarations(conn)
    name = wanted.docid or docs.docid
    if wanted.table is None:
        linked = [t for t in tables.values() if not isinstance(_document_link(conn, t, name), str)]
        if not linked:
            return None
        if len(linked) > 1:
            names = ", ".join(repr(t.name) for t in linked)
            raise InvalidInputError(f"{where} has {len(linked)} FTS5 tables of chunks ({names}): give "
                                    "--chunks-table, or --rechunk to chunk the documents instead")
        fts = linked[0]
    else:
        fts = tables[_resolve(list(tables), wanted.table, "FTS5 table", where)]
    at = f"{where} FTS5 table {fts.name!r}"
    redo = "; --rechunk chunks the documents instead"
    link = _document_link(conn, fts, name)
    if isinstance(link, str):
        raise InvalidInputError(f"{at}: {link}; give --chunk-docid-col{redo}")
    docid, content = link
    if len(fts.indexed) != 1:
        scored = ", ".join(map(repr, fts.indexed))
        raise InvalidInputError(f"{at} scores {len(fts.indexed)} columns ({scored}): drsearch reproduces "
                                f"the bm25() of one indexed column{redo}")
    detail = fts.options.get("detail", "full").lower()
    if detail != "full":
        raise InvalidInputError(f"{at} has detail={detail}: its bm25() does not count term frequencies "
                                f"as ours does{redo}")
    if fts.options.get("content") == "":
        raise InvalidInputError(f"{at} is contentless (content=''): it stores no chunk text to import{redo}")
    rank = _custom_rank(conn, fts.name)
    if rank is not None:
        raise InvalidInputError(f"{at} ranks with {rank!r}, not plain bm25(){redo}")
    text = fts.indexed[0]
    if content is None:
        return ResolvedChunks(fts.name, docid, text, "rowid", None, fts.tokenize)
    columns = [c.name for c in _columns(conn, content)]
    rowid = fts.options.get("content_rowid", "rowid")
    rowid = rowid if rowid == "rowid" else _resolve(columns, rowid, "content_rowid column", content)
    return ResolvedChunks(fts.name, docid, _resolve(columns, text, "column", content), rowid, content,
                          fts.tokenize)


def unlinked_fts5_tables(conn: apsw.Connection, docid: str) -> dict[str, str]:
    """FTS5 tables of the source that are not chunks of its documents: name → why."""
    return {name: why for name, t in fts5_declarations(conn).items()
            if isinstance(why := _document_link(conn, t, docid), str)}


def _custom_rank(conn: apsw.Connection, table: str) -> str | None:
    """The table's configured ``rank`` function if it is not plain ``bm25()``, else None."""
    try:
        config = quote_identifier(table + "_config")
        rank = conn.execute(f"SELECT v FROM {config} WHERE k = 'rank'").fetchone()
    except apsw.SQLError:  # no config table or no such key: the default, bm25()
        return None
    if rank is None or " ".join(str(rank[0]).split()).replace(" ", "") in ("bm25()", "bm25"):
        return None
    return str(rank[0])


def read_sqlite_chunks(path: str | os.PathLike[str], chunks: ResolvedChunks) -> Iterator[SourceChunk]:
    """The chunks of a resolved FTS5 chunk source, in rowid order. A docid may be TEXT or
    INTEGER; a NULL or non-text chunk stops the import (InvalidDocumentError) naming the row."""
    p = Path(path)
    conn = _connect(p)
    try:
        source = chunks.content or chunks.table
        rowid = "rowid" if chunks.rowid == "rowid" else quote_identifier(chunks.rowid)
        sql = (f"SELECT {rowid}, {quote_identifier(chunks.docid)}, {quote_identifier(chunks.text)} "
               f"FROM {quote_identifier(source)} ORDER BY {rowid}")
        for row_id, docid, text in conn.execute(sql):
            where = f"{p.name} table {source!r} rowid {row_id}"
            did = _text(docid, chunks.docid, where, docid=True)
            yield SourceChunk(did, _text(text, chunks.text, f"{where} (docid {did!r})"), where)
    except apsw.Error as e:
        raise NotADatabaseError(f"{p}: reading chunks failed ({e})") from e
    finally:
        conn.close()


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


AUTO_CHUNKS = ChunkMapping()  # the source's only FTS5 table, if it has one


def _chunk_source(path: Path, mapping: ColumnMapping,
                  chunks: ChunkMapping) -> tuple[ResolvedChunks, int] | dict[str, str]:
    """The resolved chunk source of a SQLite file and its row count; if there is none, the
    FTS5 tables it has that are not chunks (name → why), recorded in the provenance."""
    conn = _connect(path)
    try:
        docs = check_mapping(conn, mapping, path.name)
        resolved = resolve_chunks(conn, chunks, docs, path.name)
        if resolved is None:
            return unlinked_fts5_tables(conn, chunks.docid or docs.docid)
        table = quote_identifier(resolved.content or resolved.table)
        rows = conn.execute(f"SELECT count(*) FROM {table}").get
    except apsw.Error as e:
        raise NotADatabaseError(f"{path}: reading its FTS5 table failed ({e})") from e
    finally:
        conn.close()
    if not rows:
        raise InvalidInputError(f"{path}: FTS5 table {resolved.table!r} holds no chunks, nothing to import "
                                "(--rechunk chunks the documents instead)")
    return resolved, int(rows)


def _chunk_settings(settings: BuildSettings | None, found: ResolvedChunks,
                    where: str) -> tuple[BuildSettings, str]:
    """The build settings with the source table's tokenizer, unless the caller named one."""
    if settings is not None and "tokenizer" in settings.model_fields_set:
        return settings, "caller"
    base = (settings or BuildSettings()).model_dump()
    try:
        return BuildSettings(**{**base, "tokenizer": found.tokenizer}), "source"
    except ValidationError as e:  # a tokenizer this SQLite's FTS5 lacks (e.g. a custom one)
        raise InvalidInputError(f"{where} FTS5 table {found.table!r} is tokenized with {found.tokenizer!r}, "
                                f"which this SQLite cannot load, so its ranking cannot be reproduced "
                                f"({e.errors()[0]['msg']})") from None


def import_corpus(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    mapping: ColumnMapping | None = None,
    settings: BuildSettings | None = None,
    *,
    chunks: ChunkMapping | None = AUTO_CHUNKS,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
    identify: Identify | None = None,
    hash_progress: Callable[[int], None] | None = None,
) -> BuildReport:
    """Build a frozen index at ``out`` from a SQLite table (``mapping`` required) or JSONL.

    Same guarantees as :func:`drsearch.index.build` (nothing is left at ``out`` on error).
    The index's ``meta`` records the source (:func:`source_provenance`; the source is
    hashed first, ``hash_progress(n)`` per block read, and ``identify(sha256, bytes)``
    may name the release it is).

    ``chunks``: for a SQLite source with an FTS5 table of chunks (by default its only one;
    a :class:`ChunkMapping` names another, or the column naming each chunk's document),
    import exactly those chunks, in rowid order, with the tokenizer the table declares
    unless ``settings`` names one explicitly (:func:`resolve_chunks` lists what is
    refused). ``provenance`` then also records ``chunks`` (table, columns, order, row
    count) and ``tokenizer`` (``declared``, ``used``, ``chosen_by``: ``source`` or
    ``caller``). ``None``, or a source without an FTS5 table of chunks: chunk the documents
    800/700 (FTS5 tables that do not name documents, e.g. an index of titles, are recorded
    as ``provenance.unused_fts5_tables``: name → why).

    Raises InvalidInputError for a missing or superfluous mapping, a source with no
    documents or one that changed while it was read, plus the errors of
    :func:`read_sqlite_documents`, :func:`resolve_chunks`, :func:`drsearch.index.read_jsonl`
    and ``build``.
    """
    fmt = detect_format(source)
    found: tuple[ResolvedChunks, int] | dict[str, str] | None = None
    if fmt == "sqlite":
        if mapping is None:
            raise InvalidInputError(f"{source} is SQLite: give --table, --docid-col, --url-col and "
                                    "--text-col (see --inspect)")
        if chunks is not None:
            found = _chunk_source(Path(source), mapping, chunks)
        docs: Iterator[dict[str, Any]] = read_sqlite_documents(source, mapping)
    else:
        if mapping is not None:
            raise InvalidInputError(f"{source} is JSONL: table and column options apply to SQLite sources")
        if chunks is not None and chunks != AUTO_CHUNKS:
            raise InvalidInputError(f"{source} is JSONL: chunk table options apply to SQLite sources")
        docs = read_jsonl(source)
    before = _stamp(Path(source))
    first = next(docs, None)  # before anything is hashed or written (an existing --out survives)
    if first is None:
        what = f"table {mapping.table!r}" if mapping is not None else "the file"
        raise InvalidInputError(f"{source}: {what} holds no documents, nothing to import (see --inspect)")
    docs = itertools.chain([first], docs)
    provenance = source_provenance(source, mapping, identify, hash_progress)
    given: Iterator[SourceChunk] | None = None
    if isinstance(found, dict) and found:  # FTS5 tables, but none of chunks: say why they were not used
        provenance["unused_fts5_tables"] = found
    elif isinstance(found, tuple):
        resolved, rows = found
        settings, chosen = _chunk_settings(settings, resolved, Path(source).name)
        provenance["chunks"] = resolved.record(rows)
        provenance["tokenizer"] = {"declared": resolved.tokenizer, "used": settings.fts5_tokenize,
                                   "chosen_by": chosen}
        given = read_sqlite_chunks(source, resolved)
    report = build(docs, out, settings, overwrite=overwrite, progress=progress, provenance=provenance,
                   chunks=given)
    if _stamp(Path(source)) != before:  # the recorded hash may not describe what was read
        Path(out).unlink(missing_ok=True)
        raise InvalidInputError(f"{source} changed while it was imported: {out} removed, import again")
    return report


__all__ = [
    "AUTO_CHUNKS",
    "ChunkMapping",
    "ColumnInfo",
    "ColumnMapping",
    "ResolvedChunks",
    "SourceInfo",
    "TableInfo",
    "check_mapping",
    "detect_format",
    "fts5_declarations",
    "import_corpus",
    "inspect_source",
    "quote_identifier",
    "read_sqlite_chunks",
    "read_sqlite_documents",
    "resolve_chunks",
    "resolve_mapping",
    "source_provenance",
    "unlinked_fts5_tables",
]
