"""Build a frozen index file from documents.

``build(docs, path)`` writes one SQLite file in one transaction: documents (sorted by
docid, so the same input gives the same rowids and the same bytes), 800/700-word chunks,
the FTS5 index of record (made in a side file, optimised, copied in), per-term posting lists
read out of that FTS5 index for the fast scorer (fts5index.py), and a ``meta`` table. ``build(docs, path,
chunks=...)`` takes the chunks as given instead (pre-chunked input, e.g. another tool's
FTS5 table imported by ``drsearch import``): their text and order are kept exactly, so
the index ranks as that table's own ``bm25()`` does. The file is written under
a temporary name and renamed into place only when complete, so an interrupted build never
leaves a half-written index where a good one was expected.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import apsw
import numpy as np
import numpy.typing as npt
import xxhash

from .. import __version__
from ..contract.dirlock import lock_dir
from ..contract.errors import BuildError, InvalidDocumentError, InvalidInputError
from ..contract.jsonfile import json_object_lines
from . import native as kernel
from .blocklist import BlockList
from .chunking import ChunkSpan, chunk_spans
from .chunktext import byte_spans, pack_joined, pack_text
from .doctable import field_arrays
from .fts5index import chunk_lengths, windows
from .fts5spec import sql_string
from .leftovers import SCRATCH_PREFIX, remove_dead_leftovers
from .listcodes import CODE_LIMITS, RAW_WIDTH, encode_terms, list_bytes, write_list
from .schema import (
    APPLICATION_ID,
    BLOCK_POSTINGS,
    CODED_LIST_VERSION,
    DDL,
    DDL_V2,
    DOC_TEXT_CODEC,
    FTS_DDL,
    FTS_DDL_V2,
    SCHEMA_VERSION,
)
from .scoring import IDF_FLOOR, bm25_idf, chunk_norms, term_impacts
from .text import normalize_text

if TYPE_CHECKING:  # pydantic (~150 ms) only when a build runs: see _default_settings
    from .settings import BuildSettings
from .urls import canonicalize_url

RESERVED_FIELDS = ("docid", "url", "title", "text", "aliases")
_OUTPUT_CACHE_KIB = 32768  # the output's page cache (32 MiB)
_SCRATCH_CACHE_KIB = 16384  # the staged input's page cache
_BATCH_ITEMS = 32  # documents per batch handed over
_BATCH_BYTES = 8 << 20  # text per batch handed over, at most (one larger document is one batch)
_ITEM_CHUNKS = 64  # pre-chunked chunks handed over at once
_PROGRESS_CHUNKS = 256  # chunks written between progress calls
_STAGE_COMMIT_DOCS = 16  # documents staged per commit the worker is woken for (streamed builds)
# A streamed build's scratch WAL: checkpointed into the database file once it holds this many
# pages (SQLite's default), and restarted from its start when a checkpoint has copied it all.
_SCRATCH_WAL_PAGES = 1000
_STAGED_READ_DOCS = 16  # documents a streamed build's worker reads per read transaction
# A passage is ~100 words, so a streamed passage build commits and reads more of them at once:
# a commit and a read transaction each cost about as much as staging a few passages.
_STAGE_COMMIT_PASSAGES = 256
_STAGED_READ_PASSAGES = 256
_TERMS_BATCH = 65536  # terms rows inserted per executemany
_BLOB_PIECE = 1 << 20  # bytes of an ``arrays`` BLOB written at a time
FTS_TABLE = "chunks_fts"
_FTS_INSERT = f"INSERT INTO {FTS_TABLE}(rowid, text) VALUES(?,?)"
# The shadow tables of the external-content FTS5 table that hold its index, with their keys
# (%_config is not copied: the side file's holds the build's own merge settings).
_FTS_SHADOW = (("data", "id"), ("idx", "segid, term"), ("docsize", "id"))
_SIDE_CACHE_KIB = 32768  # the side FTS5 file's page cache
# FTS5's in-memory hash of pending postings (its default is 1 MiB): flushed to a new segment
# when full, so a larger one makes fewer, longer segments and less merging (2.65 -> 2.03 s of
# inserts at 3,000 documents). Automatic merges are off: 'optimize' merges everything once.
_SIDE_HASH_BYTES = 32 << 20


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What a build wrote (also stored in the file's ``meta``)."""

    path: Path
    documents: int
    indexed_documents: int
    empty_documents: int
    chunks: int
    tokens: int
    vocabulary: int
    url_collisions: int
    content_identity: str
    excluded_documents: int = 0  # documents left out by ``exclude``

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (what ``drsearch build --json`` prints)."""
        return {"path": str(self.path), "documents": self.documents,
                "indexed_documents": self.indexed_documents, "empty_documents": self.empty_documents,
                "chunks": self.chunks, "tokens": self.tokens, "vocabulary": self.vocabulary,
                "url_collisions": self.url_collisions, "content_identity": self.content_identity,
                "excluded_documents": self.excluded_documents}


def _check_unicode(value: str, where: str, what: str, docid: str, at: bool = True) -> None:
    """Refuse a string UTF-8 cannot encode (a lone surrogate, e.g. JSON's ``"\\ud800"``):
    every field is stored and hashed as UTF-8, so it would fail deep in the build. ``at``:
    name the character's position (not for a string the caller never wrote, e.g. JSON)."""
    if value.isascii():  # O(1) in CPython: the common case costs no scan
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidDocumentError(
            f"{where}: {what} is not valid Unicode (a lone surrogate, U+{ord(value[e.start]):04X}"
            f"{f' at character {e.start}' if at else ''}; docid {docid!r})") from None


def validate_document(raw: object, where: str) -> dict[str, Any]:
    """Check one input document; returns a normalised dict. Raises InvalidDocumentError
    (wrong types, a bad docid, a string field, alias or metadata string that is not valid
    Unicode, metadata that is not JSON)."""
    return _validated(raw, where)[0]


def _validated(raw: object, where: str, normalize: bool = True) -> tuple[dict[str, Any], str]:
    """:func:`validate_document`'s dict and its metadata's JSON text as the stage stores it
    (sorted keys, characters as they are): serialized once, to check it and to store it.
    ``normalize=False``: title and text as given (a passage's are normalized where its
    document is derived again, on the tokenizing side)."""
    if not isinstance(raw, Mapping):
        raise InvalidDocumentError(f"{where}: a document must be a JSON object")
    docid = raw.get("docid")
    if not isinstance(docid, str) or not docid.strip():
        raise InvalidDocumentError(f"{where}: 'docid' must be a non-empty string")
    if docid != docid.strip() or any(c in docid for c in "\r\n\t\x00"):
        raise InvalidDocumentError(f"{where}: docid {docid!r} has whitespace or control characters")
    _check_unicode(docid, where, "'docid'", docid)
    for key in ("url", "text"):
        if not isinstance(raw.get(key), str):
            raise InvalidDocumentError(f"{where}: '{key}' must be a string (docid {docid!r})")
        _check_unicode(raw[key], where, f"'{key}'", docid)
    title = raw.get("title", "")
    if not isinstance(title, str):
        raise InvalidDocumentError(f"{where}: 'title' must be a string (docid {docid!r})")
    _check_unicode(title, where, "'title'", docid)
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InvalidDocumentError(f"{where}: 'aliases' must be a list of strings")
    for i, alias in enumerate(aliases):
        _check_unicode(alias, where, f"alias {i}", docid)
    metadata = {k: v for k, v in raw.items() if k not in RESERVED_FIELDS}
    metadata_json = "{}"
    if metadata:  # stored as this JSON text (UTF-8): every key and string in it checked at once
        try:  # sorted keys: a caller's keys that do not sort (1 and "a") are refused here too
            metadata_json = json.dumps(metadata, sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError) as e:  # a caller's object, not read from JSON
            raise InvalidDocumentError(f"{where}: metadata is not JSON: {e} (docid {docid!r})") from None
        _check_unicode(metadata_json, where, "metadata", docid, at=False)
    return {
        "docid": docid,
        "url": raw["url"],
        "title": normalize_text(title) if normalize else title,
        "text": normalize_text(raw["text"]) if normalize else raw["text"],
        "aliases": aliases,
        "metadata": metadata,
    }, metadata_json


@dataclass(frozen=True, slots=True)
class SourceChunk:
    """One chunk of pre-chunked input: its document's docid and its exact text.

    ``where`` (e.g. ``table rowid 17``) names the chunk in build errors.
    """

    docid: str
    text: str
    where: str = ""


class SourcedDoc(dict[str, Any]):
    """A document that remembers where it was read from: ``build`` names ``where`` (e.g.
    ``file:line`` or ``table rowid``) in its errors about the document."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        super().__init__(data)
        self.where = where


PASSAGE_URL_PREFIX = "passage:"  # a passage's synthetic URL: documents need one; see passage_parts


def is_passage(raw: object) -> bool:
    """True for a passage line as Pyserini and Search-R1 ship corpora: ``{"id", "contents"}``
    (no ``docid``), the title on the first line of ``contents``."""
    return isinstance(raw, Mapping) and "contents" in raw and "docid" not in raw


def passage_parts(raw: Mapping[str, Any], where: str) -> tuple[dict[str, Any], SourceChunk]:
    """A passage line as a document and its one chunk. Raises InvalidDocumentError.

    The chunk is ``contents`` byte for byte (title line included: Pyserini and Search-R1
    index ``contents`` whole, so BM25 sees what theirs sees, and ``/retrieve`` returns it as
    given); the document's title is the first line of ``contents``, its text the rest, its
    URL ``passage:<id>`` (a document must have one; nothing serves it as a link). Keys other
    than ``id`` and ``contents`` become metadata, as in any document.
    """
    pid, contents = raw.get("id"), raw["contents"]
    if not isinstance(pid, str) or not pid.strip():
        raise InvalidDocumentError(f"{where}: a passage's 'id' must be a non-empty string")
    if not isinstance(contents, str):
        raise InvalidDocumentError(f"{where}: 'contents' must be a string (id {pid!r})")
    title, _, text = contents.partition("\n")
    doc = {k: v for k, v in raw.items() if k not in ("id", "contents")}
    doc.update(docid=pid, url=f"{PASSAGE_URL_PREFIX}{pid}", title=title, text=text)
    return doc, SourceChunk(pid, contents, where)


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield documents from a JSONL file; errors name the line. Blank lines are skipped.

    Lines are documents (``docid``, ``url``, ``title``, ``text``) or passages (``id``,
    ``contents``: :func:`is_passage`), yielded as read: ``build`` takes either kind, not
    both in one input."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed in finally
    except OSError as e:
        raise InvalidDocumentError(f"cannot read {path}: {e.strerror}") from e
    try:
        for n, obj in json_object_lines(fh, path, what="a document", error=InvalidDocumentError):
            yield SourcedDoc(obj, where=f"{path}:{n}")
    finally:
        fh.close()


class _Stager:
    """Validates documents and stages them in the scratch database (sorted later by docid),
    leaving out those whose docid ``exclude`` lists.

    Counts the documents staged (``n``) and left out (``excluded``), and the chunks the staged
    documents will make (``chunks``, only when ``count_chunks``: an extra word split per
    document, paid only by callers that show a total). ``ascending`` stays true while every
    staged docid is greater than the one before (what lets a 2-thread build tokenize documents
    while later ones are still being staged).
    """

    def __init__(self, conn: apsw.Connection, settings: BuildSettings, count_chunks: bool,
                 exclude: BlockList | None = None, passages: bool = False) -> None:
        self.passages = passages  # the input is passage lines: see _PASSAGES_DDL
        if passages:
            conn.execute(_PASSAGES_DDL)
        else:
            conn.execute(
                "CREATE TABLE stage(docid TEXT PRIMARY KEY, url TEXT, title TEXT, text TEXT,"
                " aliases TEXT, metadata TEXT) WITHOUT ROWID"
            )
        self.conn = conn
        self.settings = settings
        self.count_chunks = count_chunks
        self.exclude = exclude
        self.seen = self.n = self.excluded = self.chunks = 0
        self.last = ""  # docids are non-empty, so every docid is greater than this
        self.ascending = True

    @property
    def total(self) -> int:
        """The chunks the staged input makes (``on_start``'s total): a passage is one chunk."""
        return self.n if self.passages else self.chunks

    def add(self, raw: object) -> bool:
        """Validate and stage one document; False if ``exclude`` left it out.
        Raises InvalidDocumentError (bad document, duplicate docid)."""
        self.seen += 1
        where = getattr(raw, "where", f"document {self.seen}")
        chunk = None
        if is_passage(raw) != self.passages:  # both kinds in one input: which line is which?
            raise InvalidDocumentError(
                f"{where}: a {'passage' if not self.passages else 'document'} line in an input of "
                f"{'documents' if not self.passages else 'passages'} (every line must be "
                "{docid, url, title, text} or every line {id, contents}, not both)")
        if self.passages:
            raw, chunk = passage_parts(raw, where)  # type: ignore[arg-type]  # is_passage: a Mapping
        d, metadata_json = _validated(raw, where, normalize=chunk is None)
        if self.exclude is not None and d["docid"] in self.exclude:
            self.excluded += 1
            return False
        self.n += 1
        if self.count_chunks:
            self.chunks += len(chunk_spans(len(d["text"].split()), self.settings.chunk_words,
                                           self.settings.chunk_stride))
        if chunk is not None:  # a passage: staged as given (its document is derived from it again)
            try:
                self.conn.execute("INSERT INTO stage_passages VALUES(?,?,?,?,?)",
                                  (self.n, chunk.docid, json.dumps(d["aliases"]), metadata_json, chunk.text))
            except apsw.ConstraintError:
                raise InvalidDocumentError(f"{where}: duplicate docid {d['docid']!r}") from None
            _check_unicode(chunk.text, where, "'contents'", chunk.docid)
            return True
        # Python orders str by code point, SQLite's BINARY collation by UTF-8 bytes: the same order.
        if d["docid"] > self.last:
            self.last = d["docid"]
        else:
            self.ascending = False
        try:
            self.conn.execute(
                "INSERT INTO stage VALUES(?,?,?,?,?,?)",
                (d["docid"], d["url"], d["title"], d["text"], json.dumps(d["aliases"]), metadata_json),
            )
        except apsw.ConstraintError:
            raise InvalidDocumentError(f"{where}: duplicate docid {d['docid']!r}") from None
        return True


# A passage file's staged input: each passage once, in input order (``seq``: its document's
# and its chunk's row), its ``contents`` as given. The tokenizing side derives the document
# (title line, NFC text, ``passage:`` URL) from it again, as passage_parts did here: half the
# staged bytes of a document row plus a chunk row, one insert, and rows read back in the order
# they were staged (no sort), so a 2-thread build tokenizes them while staging goes on.
_PASSAGES_DDL = ("CREATE TABLE stage_passages(seq INTEGER PRIMARY KEY, docid TEXT NOT NULL UNIQUE, "
                 "aliases TEXT NOT NULL, metadata TEXT NOT NULL, contents TEXT NOT NULL)")


def _create_stage_chunks(conn: apsw.Connection) -> None:
    conn.execute("CREATE TABLE stage_chunks(seq INTEGER PRIMARY KEY, docid TEXT NOT NULL, "
                 "text TEXT NOT NULL, at TEXT NOT NULL)")


def _stage_chunks(conn: apsw.Connection, chunks: Iterable[SourceChunk],
                  exclude: BlockList | None = None) -> int:
    """Validate and stage pre-chunked input in its given order (``seq``: the chunk rowid),
    leaving out the chunks of documents ``exclude`` lists."""
    _create_stage_chunks(conn)
    n = 0
    for n, chunk in enumerate(chunks, 1):
        where = getattr(chunk, "where", "") or f"chunk {n}"
        if not isinstance(chunk, SourceChunk):
            raise InvalidDocumentError(f"{where}: a chunk must be a SourceChunk, got {type(chunk).__name__}")
        if not isinstance(chunk.docid, str) or not chunk.docid:
            raise InvalidDocumentError(f"{where}: a chunk's docid must be a non-empty string")
        if not isinstance(chunk.text, str):
            raise InvalidDocumentError(f"{where}: a chunk's text must be a string (docid {chunk.docid!r})")
        _check_unicode(chunk.docid, where, "a chunk's docid", chunk.docid)
        _check_unicode(chunk.text, where, "chunk text", chunk.docid)
        if exclude is not None and chunk.docid in exclude:
            continue
        conn.execute("INSERT INTO stage_chunks VALUES(?,?,?,?)", (n, chunk.docid, chunk.text, where))
    orphan = conn.execute("SELECT at, docid FROM stage_chunks WHERE docid NOT IN "
                          "(SELECT docid FROM stage) ORDER BY seq LIMIT 1").fetchone()
    if orphan is not None:
        raise InvalidDocumentError(f"{orphan[0]}: chunk of docid {orphan[1]!r}, which no document has")
    return n



def _default_settings() -> BuildSettings:
    """The default settings, imported here: ``drsearch.index`` imports this module eagerly,
    and a process that only searches must not pay for pydantic (settings.py)."""
    from .settings import BuildSettings

    return BuildSettings()

def build(
    docs: Iterable[object],
    path: str | os.PathLike[str],
    settings: BuildSettings | None = None,
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
    provenance: Mapping[str, Any] | None = None,
    on_start: Callable[[int], None] | None = None,
    chunks: Iterable[SourceChunk] | None = None,
    exclude: BlockList | None = None,
) -> BuildReport:
    """Build a frozen index at ``path`` from documents (mappings with docid/url/title/text).

    Extra keys become the document's metadata; ``aliases`` (a list of URLs) adds alias URLs
    that ``open(url=...)`` resolves. Raises InvalidDocumentError (bad or duplicate docid,
    wrong field types; nothing is written) and BuildError (output exists and ``overwrite``
    is false, or the file cannot be written), InvalidInputError (``provenance`` is not
    JSON, or the output's directory does not exist: raised before any document is read).
    ``progress`` is called with chunk counts; ``on_start(total)``, once all documents are
    read and validated, with the number of chunks they make, so a bar can show a total
    (before any ``progress`` call, even when writing began earlier: ``threads=2``).
    ``provenance`` (a JSON object: where the documents came from, e.g. ``drsearch import``'s
    source file and hash) is stored as ``meta`` key ``provenance``; without it no such key
    is written and the file is byte-identical to one built before the option existed. It
    does not enter the content identity, which depends on the documents only.

    ``chunks`` (pre-chunked input): the index's chunks, exactly as given, in the order
    given, instead of 800/700-word windows of the documents. Chunk rowids follow that order
    (it is FTS5's tie-break, so ties rank as in the table the chunks came from); a
    document's chunks get ordinals 0, 1, ... in that order; documents are laid out in the
    order of their first chunk (documents without one follow, by docid). Chunk text is
    kept byte for byte (not NFC-normalised, not re-split; empty chunks are kept: they count
    in BM25's N). Every chunk must name a document's docid (InvalidDocumentError
    otherwise). ``meta`` then records ``chunking: "pre-chunked"`` with null
    ``chunk_words``/``chunk_stride``/``chunk_overlap``, and the content identity covers
    the chunks too.

    ``exclude`` (a blocklist): documents it lists are left out entirely (not in the text,
    the postings or the BM25 statistics: a server of the file cannot leak them through
    scores); ``meta`` key ``excluded_docids`` records the list's hash, size and how many
    documents were left out. Without it no such key is written.
    """
    settings = settings or _default_settings()
    out = Path(path)
    if provenance is not None:
        try:
            if not isinstance(provenance, Mapping):
                raise TypeError(f"got {type(provenance).__name__}")
            json.dumps(provenance, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"provenance must be a JSON object: {e}") from e
    if out.exists() and not overwrite:
        raise BuildError(f"{out} already exists (use --force / overwrite=True to replace it)")
    if out.is_dir():
        raise BuildError(f"{out} is a directory, not an index file")
    if not out.parent.is_dir():  # bad input, like a missing --database: exit 2, nothing read
        raise InvalidInputError(f"directory {out.parent} does not exist (create it first)")
    remove_dead_leftovers(out)  # what killed builds left here (only provably theirs)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=out.parent) as td, \
                lock_dir(td, "build scratch directory"):  # held until we die: see leftovers.py
            report = _build_into(docs, tmp, Path(td), settings, progress, provenance, on_start, chunks,
                                 exclude)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return BuildReport(out, *report)


def _open_scratch(tmpdir: Path, shared: bool = False) -> apsw.Connection:
    """The build's scratch database (staged input, deleted with ``tmpdir``): a file of its
    own, so the tokenizing side reads it while the output's connection writes. ``shared``:
    in WAL mode, so the worker process reads what is committed while staging goes on."""
    conn = apsw.Connection(str(tmpdir / "stage.sqlite3"))
    mode = (("journal_mode=WAL", f"wal_autocheckpoint={_SCRATCH_WAL_PAGES}") if shared
            else ("journal_mode=OFF", "locking_mode=EXCLUSIVE"))
    for pragma in (*mode, "synchronous=OFF", f"cache_size=-{_SCRATCH_CACHE_KIB}", "temp_store=FILE"):
        conn.execute(f"PRAGMA {pragma}")
    return conn


def _open_output(tmp: Path) -> apsw.Connection:
    """A new, empty output file at ``tmp`` (a leftover one is removed first)."""
    tmp.unlink(missing_ok=True)
    return apsw.Connection(str(tmp))


def _init_output(conn: apsw.Connection, settings: BuildSettings) -> None:
    """The output's settings and schema, in the transaction that writes the whole file."""
    for pragma in ("journal_mode=OFF", "synchronous=OFF", "locking_mode=EXCLUSIVE",
                   f"cache_size=-{_OUTPUT_CACHE_KIB}", "temp_store=FILE", "page_size=4096"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("BEGIN")
    stored = settings.chunk_text == "stored"
    conn.execute(DDL_V2 if stored else DDL)
    conn.execute((FTS_DDL_V2 if stored else FTS_DDL).format(tokenize=sql_string(settings.fts5_tokenize)))


def _schema_version(settings: BuildSettings) -> int:
    """The version of the file ``settings`` build: 2 with every chunk's text stored."""
    return 2 if settings.chunk_text == "stored" else SCHEMA_VERSION


def _build_into(
    docs: Iterable[object],
    tmp: Path,
    tmpdir: Path,
    settings: BuildSettings,
    progress: Callable[[int], None] | None,
    provenance: Mapping[str, Any] | None = None,
    on_start: Callable[[int], None] | None = None,
    chunks: Iterable[SourceChunk] | None = None,
    exclude: BlockList | None = None,
) -> tuple[Any, ...]:
    rest = iter(docs)
    first = next(rest, None)  # a passage file (is_passage) is pre-chunked: one passage, one chunk
    passages = chunks is None and first is not None and is_passage(first)
    if first is not None:
        rest = itertools.chain([first], rest)
    prechunked = chunks is not None or passages
    # Two threads, documents: the worker tokenizes each document as soon as it is staged,
    # if the input comes in ascending docid order (as a corpus written by docid does); see
    # _stream. Passages too (their file order is their order). Otherwise, and given chunks,
    # every document is staged first.
    streamed = settings.threads == 2 and (passages or not prechunked)
    conn = _open_output(tmp)
    scratch = _open_scratch(tmpdir, shared=streamed)
    try:
        _init_output(conn, settings)
        stager = _Stager(scratch, settings, on_start is not None and not prechunked, exclude, passages)
        stats = (_stream(conn, scratch, stager, rest, tmpdir, settings, progress, on_start)
                 if streamed else None)  # never None for passages: they need no order
        if stats is None:
            if streamed:  # out of docid order: nothing written counts, start the file again
                conn.close()
                conn = _open_output(tmp)
                _init_output(conn, settings)
                scratch.execute("PRAGMA journal_mode=DELETE")  # the worker to come opens it read-only
            scratch.execute("BEGIN")
            for raw in rest:
                stager.add(raw)
            n_chunks = stager.total
            if chunks is not None:
                n_chunks = _stage_chunks(scratch, chunks, exclude)
            scratch.execute("COMMIT")
            if on_start is not None:
                on_start(n_chunks)
            stats = _write_documents(conn, scratch, tmpdir, settings, progress, chunks is not None,
                                     passages)
        n_docs, n_excluded = stager.n, stager.excluded
        meta = _meta(settings, n_docs, stats, prechunked)
        if passages:  # the engine and /retrieve read it: a passage is its one chunk's text
            meta["source_shape"] = "passages"
        if provenance is not None:
            meta["provenance"] = dict(provenance)
        if exclude is not None:
            meta["excluded_docids"] = {"sha256": exclude.sha256, "listed": len(exclude),
                                       "excluded": n_excluded, "source": Path(exclude.source).name}
        conn.executemany(
            "INSERT INTO meta VALUES(?,?)",
            [(k, json.dumps(v, sort_keys=True)) for k, v in sorted(meta.items())],
        )
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={_schema_version(settings)}")
        conn.execute("COMMIT")
    except apsw.Error as e:
        raise BuildError(f"building {tmp.name}: {e}") from e
    finally:
        scratch.close()
        conn.close()
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    return (n_docs, stats["indexed_documents"], stats["empty_documents"], stats["chunks"],
            stats["tokens"], stats["vocabulary"], stats["url_collisions"], stats["content_identity"],
            n_excluded)


# A ``chunks`` row: (id, doc, ordinal, start_word, end_word, text) in schema version 2; (id, doc,
# ordinal, start_word, end_word, start_byte, end_byte, text or None) in version 4, whose byte
# span is in the text as it is until the writing side compresses the document (joined: the span
# becomes one in the joined words) and adds zstart after end_byte.
ChunkRow = tuple[Any, ...]
# A document's text as _pack_text packs it: the stored bytes, its chunks' zstarts and spans.
_Packed = tuple[bytes, list[int], list[tuple[int, int]]]


@dataclass(slots=True)
class _Item:
    """One unit of work for the output's connection, in file order: a document's row, its
    full text and canonical URLs (``doc`` is None for a pre-chunked build's chunk batch),
    and the chunk rows it brings."""

    doc: tuple[Any, ...] | None
    text: str
    urls: list[str]
    chunks: list[ChunkRow]
    # The text's compressed bytes, its chunks' zstarts and spans (see _pack_text): being
    # compressed on the writing side (a Future), or compressed by a pre-chunked build's worker
    # (the tuple; ``text`` is then "": not sent twice).
    packed: Future[_Packed] | _Packed | None = None


def _side_path(tmpdir: Path) -> Path:
    """The side file where the build's FTS5 index is made (see :class:`_Tokenizing`)."""
    return tmpdir / "fts5.sqlite3"


def _open_side(tmpdir: Path, settings: BuildSettings) -> apsw.Connection:
    """A new side file holding the empty FTS5 table, in the transaction that fills it."""
    path = _side_path(tmpdir)
    path.unlink(missing_ok=True)
    conn = apsw.Connection(str(path))
    for pragma in ("journal_mode=OFF", "synchronous=OFF", f"cache_size=-{_SIDE_CACHE_KIB}",
                   "temp_store=FILE", "page_size=4096"):
        conn.execute(f"PRAGMA {pragma}")
    conn.execute("BEGIN")
    conn.execute(FTS_DDL.format(tokenize=sql_string(settings.fts5_tokenize)))
    for option, value in (("hashsize", _SIDE_HASH_BYTES), ("automerge", 0)):
        conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES(?, ?)", (option, value))
    return conn


class _Tokenizing:
    """The tokenizing side of the build: reads the staged input in file order, cuts chunks
    and indexes each in FTS5 (in a side file: FTS5 tokenizes it, once), hashes the content
    identity; at the end merges FTS5's index and derives the posting lists from it (term ids
    in FTS5's key order). Owned by one thread.

    ``control`` (a streamed build's worker): the read end of a pipe on which the writing side
    sends a byte after each commit of staged documents; documents are then read as they are
    committed (see :meth:`_staged`), until the ``stage_done`` table appears.
    """

    def __init__(self, scratch: apsw.Connection, tmpdir: Path, settings: BuildSettings,
                 prechunked: bool, control: int | None = None, passages: bool = False) -> None:
        self.scratch = scratch
        self.control = control
        self.settings = settings
        self.prechunked = prechunked or passages
        self.passages = passages  # the staged input is stage_passages (see _PASSAGES_DDL)
        self.side = _side_path(tmpdir)
        self.fts = _open_side(tmpdir, settings)
        self.insert = self.fts.cursor()
        self.native = kernel.available()  # chunk texts cut in C (else split and joined here)
        self.stored = settings.chunk_text == "stored"  # schema version 2: every chunk's text
        self.identity = xxhash.xxh3_128()
        self.chunk_doc = array("i", [0])
        self.chunk_ordinal = array("i", [0])
        self.n_chunks = self.indexed = self.empty = 0

    def _chunk(self, doc_row: int, ordinal: int, start: int, end: int, text: str,
               span: tuple[int, int] = (-1, -1)) -> ChunkRow:
        """Index the chunk in FTS5 and return its ``chunks`` row: in version 4 a chunk with a
        byte ``span`` of its document's text stores no text of its own (chunktext.py)."""
        self.n_chunks += 1
        self.insert.execute(_FTS_INSERT, (self.n_chunks, text))
        self.chunk_doc.append(doc_row)
        self.chunk_ordinal.append(ordinal)
        if self.stored:
            return (self.n_chunks, doc_row, ordinal, start, end, text)
        return (self.n_chunks, doc_row, ordinal, start, end, *span, None if span[0] >= 0 else text)

    def _staged(self) -> Iterator[tuple[Any, ...]]:
        """The staged documents in docid order. Streamed, the staging side commits documents in
        ascending docid order while this runs: each query takes those after the last one read,
        and a wake-up byte follows every commit, so no document is missed or read twice.

        Streamed, documents are read :data:`_STAGED_READ_DOCS` at a time, each read its own
        short transaction, ended before the rows are tokenized: a reader that keeps a WAL
        snapshot open (a cursor walked while its rows are processed, or while waiting for
        more) stops every checkpoint from restarting the WAL, which then grows to the whole
        staged input's size (4.4 GB at 121,272 documents)."""
        query = "SELECT docid, url, title, text, aliases, metadata, 0 FROM stage"
        key, text_col, read = "docid", 3, _STAGED_READ_DOCS
        if self.passages:  # in staging order: its key ascends as it is staged
            query = "SELECT seq, docid, aliases, metadata, contents FROM stage_passages"
            key, text_col, read = "seq", 4, _STAGED_READ_PASSAGES
        if self.control is None:
            yield from self.scratch.execute(f"{query} ORDER BY {key}")
            return
        step = f"{query} WHERE {key} > ? ORDER BY {key} LIMIT {read}"
        last: str | int = 0 if self.passages else ""
        ended = False
        while True:
            # Looked at first: once staging is done, the reads below see every document.
            done = self.scratch.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'stage_done'").fetchall()
            while rows := self._read_step(step, last, text_col):
                last = rows[-1][0]
                yield from rows
            if done and done[0][0]:
                return
            if ended:
                raise BuildError("the writing side stopped before staging every document")
            ended = not os.read(self.control, 1 << 16)  # every wake-up sent so far; b"" at EOF

    def _read_step(self, step: str, last: str | int, text_col: int) -> list[tuple[Any, ...]]:
        """The next staged documents after ``last``: at most :data:`_STAGED_READ_DOCS`, and no
        more text than a batch (:data:`_BATCH_BYTES`) past the first; the read transaction
        ends before this returns (the statement is reset)."""
        rows: list[tuple[Any, ...]] = []
        size = 0
        cursor = self.scratch.execute(step, (last,))
        try:
            for row in cursor:
                rows.append(row)
                size += len(row[text_col])
                if size >= _BATCH_BYTES:
                    break
        finally:
            cursor.close()
        return rows

    def _cut(self, text: str) -> tuple[list[str], int, list[ChunkSpan]]:
        """A document's chunk texts, its number of words and its chunks' spans. With the C
        kernel, the same strings as splitting and joining here, without an object per word
        (splitting and joining were a sixth of this side's time)."""
        settings = self.settings
        if not self.native:
            words = text.split()
            spans = chunk_spans(len(words), settings.chunk_words, settings.chunk_stride)
            return [" ".join(words[span.start:span.end]) for span in spans], len(words), spans
        n_words = kernel.word_count(text)
        spans = chunk_spans(n_words, settings.chunk_words, settings.chunk_stride)
        return kernel.join_words(text, [(span.start, span.end) for span in spans]), n_words, spans

    def items(self) -> Iterator[_Item]:
        """Every document (then, pre-chunked, every chunk) in file order."""
        if self.passages:
            yield from self._passage_items()
            return
        rows: Iterable[tuple[Any, ...]]
        if self.prechunked:  # documents in the order of their first chunk: chunk rowids stay in input order
            rows = self.scratch.execute(
                "SELECT s.docid, s.url, s.title, s.text, s.aliases, s.metadata, coalesce(f.n, 0) "
                "FROM stage AS s LEFT JOIN (SELECT docid, min(seq) AS first, count(*) AS n "
                "FROM stage_chunks GROUP BY docid) AS f ON f.docid = s.docid "
                "ORDER BY f.first IS NULL, f.first, s.docid")
        else:
            rows = self._staged()
        row_of: dict[str, int] = {}
        for doc_row, (docid, url, title, text, aliases, metadata, given) in enumerate(rows, 1):
            for part in (docid, url, title, text, metadata):
                self.identity.update(part.encode("utf-8"))
                self.identity.update(b"\x00")
            chunk_rows = []
            if self.prechunked:
                row_of[docid] = doc_row
                n_doc_chunks = int(given)
                n_words = kernel.word_count(text) if self.native else len(text.split())
            else:
                texts, n_words, spans = self._cut(text)
                pairs = [(span.start, span.end) for span in spans]
                offsets = pairs if self.stored else (kernel.word_byte_spans(text, pairs) if self.native
                                                     else byte_spans(text, pairs))
                chunk_rows = [self._chunk(doc_row, span.ordinal, span.start, span.end, chunk_text, where)
                              for span, chunk_text, where in zip(spans, texts, offsets, strict=True)]
                n_doc_chunks = len(spans)
            if n_doc_chunks:
                self.indexed += 1
            else:
                self.empty += 1
            canonical = canonicalize_url(url)
            urls = list(dict.fromkeys([canonical, *map(canonicalize_url, json.loads(aliases))]))
            yield _Item((doc_row, docid, url, canonical, title, metadata, n_words, n_doc_chunks),
                        text, urls, chunk_rows)
        if self.prechunked:  # word offsets into the document are unknown for given chunks: -1
            self.identity.update(b"\x01chunks\x00")
            ordinals: dict[int, int] = {}
            pending: list[ChunkRow] = []
            given = self.scratch.execute("SELECT docid, text FROM stage_chunks ORDER BY seq")
            for docid, chunk_text in given:
                for part in (docid, chunk_text):
                    self.identity.update(part.encode("utf-8"))
                    self.identity.update(b"\x00")
                doc_row = row_of[docid]
                ordinal = ordinals[doc_row] = ordinals.get(doc_row, -1) + 1
                pending.append(self._chunk(doc_row, ordinal, -1, -1, chunk_text))
                if len(pending) >= _ITEM_CHUNKS:
                    yield _Item(None, "", [], pending)
                    pending = []
            if pending:
                yield _Item(None, "", [], pending)

    def _passage_items(self) -> Iterator[_Item]:
        """A passage file's documents, then its chunks, in input order: the same rows (and
        content identity) as a document and a chunk per passage staged by passage_parts."""
        native = self.native
        identity = self.identity
        for doc_row, (seq, docid, aliases, metadata, contents) in enumerate(self._staged(), 1):
            if seq != doc_row:  # staged 1, 2, 3, ...: a passage's row is its seq
                raise BuildError(f"internal error: passage {seq} staged as row {doc_row}")
            title, _, text = contents.partition("\n")
            title, text = normalize_text(title), normalize_text(text)
            url = f"{PASSAGE_URL_PREFIX}{docid}"
            for part in (docid, url, title, text, metadata):
                identity.update(part.encode("utf-8"))
                identity.update(b"\x00")
            self.indexed += 1  # every passage is its one chunk
            n_words = kernel.word_count(text) if native else len(text.split())
            canonical = canonicalize_url(url)
            urls = [canonical] if aliases == "[]" else list(
                dict.fromkeys([canonical, *map(canonicalize_url, json.loads(aliases))]))
            yield _Item((doc_row, docid, url, canonical, title, metadata, n_words, 1), text, urls, [])
        identity.update(b"\x01chunks\x00")  # word offsets into the document are unknown: -1
        pending: list[tuple[int, int, int, int, int, str]] = []
        for doc_row, docid, chunk_text in self.scratch.execute(
                "SELECT seq, docid, contents FROM stage_passages ORDER BY seq"):
            for part in (docid, chunk_text):
                identity.update(part.encode("utf-8"))
                identity.update(b"\x00")
            pending.append(self._chunk(doc_row, 0, -1, -1, chunk_text))
            if len(pending) >= _ITEM_CHUNKS:
                yield _Item(None, "", [], pending)
                pending = []
        if pending:
            yield _Item(None, "", [], pending)

    def finish(self, spill: Path, on_merged: Callable[[int], None] | None = None,
               on_window: _OnWindow | None = None) -> _Tokenized:
        """Merge FTS5's index into one segment, then derive every term's postings BLOB from
        it, written to ``spill`` in term id order (impacts need every chunk's length, so
        this runs once all chunks are indexed). ``on_merged(n_rows)``: called once the
        merged index is committed (the side file may then be read); ``on_window``: see
        :func:`_merge_postings`. The side file is closed when this returns."""
        try:
            self.fts.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES('optimize')")
            self.fts.execute("COMMIT")
            if on_merged is not None:
                on_merged(self.n_chunks)
            chunk_len = chunk_lengths(self.fts, FTS_TABLE, self.n_chunks)
            postings = _merge_postings(self.fts, chunk_len, self.settings, spill, on_window)
        finally:
            self.fts.close()
        return _Tokenized(self.side, postings, self.chunk_doc.tobytes(), chunk_len.tobytes(),
                          self.chunk_ordinal.tobytes(), {
                              "indexed_documents": self.indexed, "empty_documents": self.empty,
                              "chunks": self.n_chunks, "tokens": int(chunk_len.sum(dtype=np.int64)),
                              "vocabulary": len(postings.df), "postings": postings.postings,
                              "dense_terms": int(postings.dense.sum()),
                              "content_identity": self.identity.hexdigest()})


@dataclass(slots=True)
class _Tokenized:
    """What the tokenizing side hands over at the end: the side file with FTS5's index,
    postings, chunk arrays (native int32 bytes), counts and the content identity."""

    side: Path
    postings: _Postings
    chunk_doc: bytes
    chunk_len: bytes
    chunk_ordinal: bytes
    stats: dict[str, Any]


@dataclass(slots=True)
class _Postings:
    """The merged postings: BLOBs in ``spill`` in term id order, and the ``terms`` columns:
    the terms' UTF-8 bytes end to end in :func:`_terms_path` (``term_bytes`` each), their
    dfs, dense flags and upper bounds. The terms stay on disk, not in a list: with millions
    of terms a list of them (and its pickled copy in a 2-thread build's other process) is
    hundreds of MB."""

    spill: Path
    df: npt.NDArray[np.int64]
    dense: npt.NDArray[np.bool_]
    max_impact: npt.NDArray[np.float64]
    term_bytes: npt.NDArray[np.int64]
    n_rows: int
    postings: int
    # Each list's code width and table size (listcodes.py; 8 and 0: raw, and for dense terms),
    # and its BLOB's bytes in the spill file.
    width: npt.NDArray[np.int64]
    n_table: npt.NDArray[np.int64]
    blob_bytes: npt.NDArray[np.int64]

    def iter_terms(self, batch: int = _TERMS_BATCH) -> Iterator[list[str]]:
        """The terms in term id order, ``batch`` at a time."""
        ends = np.cumsum(self.term_bytes)
        with open(_terms_path(self.spill), "rb") as fh:
            for s in range(0, len(ends), batch):
                e = min(s + batch, len(ends))
                base = int(ends[s - 1]) if s else 0
                data = fh.read(int(ends[e - 1]) - base)
                if len(data) != int(ends[e - 1]) - base:
                    raise BuildError("internal error: the terms spill file ends early")
                cuts = (ends[s:e] - base).tolist()
                yield [data[a:b].decode("utf-8") for a, b in zip([0, *cuts[:-1]], cuts, strict=True)]


def _terms_path(spill: Path) -> Path:
    """Where the terms of the postings spilled to ``spill`` go."""
    return spill.with_suffix(".terms")


def _joined(parts: list[Any], dtype: Any) -> Any:
    """The windows' arrays end to end (an index without terms has none)."""
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


# Called with each window's terms' BLOB sizes and dense flags once their BLOBs are in the
# spill file.
_OnWindow = Callable[[npt.NDArray[np.int64], npt.NDArray[np.bool_]], None]
# The most distinct impacts of 1- and 2-byte codes the build writes (listcodes.CODE_LIMITS;
# tests lower them to reach every layout with small lists).
_CODE_LIMITS = CODE_LIMITS


def _merge_postings(fts: apsw.Connection, chunk_len: npt.NDArray[np.int32], settings: BuildSettings,
                    spill: Path, on_window: _OnWindow | None = None) -> _Postings:
    """Each term's postings from FTS5's merged index, in its key order: sparse impacts + chunk
    ids (+ block maxima), or a dense tf array for clamped terms, written to ``spill``; after
    each window of terms the file is flushed and ``on_window`` told (a 2-thread build's
    writing side copies them meanwhile). A version-5 file's lists store their impacts as codes
    into a table of each list's distinct impacts where that is smaller (listcodes.py); a
    version-2 file's (stored chunk text) stay raw. Raises BuildError when the positions decoded
    for a chunk are not its length as FTS5 recorded it (a misread index)."""
    n_rows = len(chunk_len) - 1
    norm = chunk_norms(chunk_len, settings.k1, settings.b)
    k1p1 = settings.k1 + 1.0
    positions = np.zeros(n_rows + 1, dtype=np.int64)  # every posting's tf, summed by chunk
    bytes_parts: list[npt.NDArray[np.int64]] = []
    df_parts: list[npt.NDArray[np.int64]] = []
    dense_parts: list[npt.NDArray[np.bool_]] = []
    max_parts: list[npt.NDArray[np.float64]] = []
    width_parts: list[npt.NDArray[np.int64]] = []
    table_parts: list[npt.NDArray[np.int64]] = []
    size_parts: list[npt.NDArray[np.int64]] = []
    coded = _schema_version(settings) >= CODED_LIST_VERSION
    total = 0
    with open(spill, "wb") as out, open(_terms_path(spill), "wb") as terms_out:
        for w in windows(fts, FTS_TABLE, positions, native=kernel.available()):
            ends = np.cumsum(w.dfs)
            starts = ends - w.dfs
            # IDF per term with libm's log (as FTS5 computes it), then every impact at once.
            idfs = np.array([bm25_idf(n_rows, d) for d in w.dfs.tolist()], dtype=np.float64)
            chunks = w.chunks.astype("<u4", copy=False)
            impacts = term_impacts(np.repeat(idfs, w.dfs), w.tfs.astype(np.float64), norm[chunks],
                                   k1p1).astype("<f8")
            is_dense = idfs <= IDF_FLOOR
            encoded = [t.encode("utf-8") for t in w.terms]
            terms_out.write(b"".join(encoded))
            bytes_parts.append(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)))
            df_parts.append(w.dfs)
            dense_parts.append(is_dense)
            max_parts.append(np.maximum.reduceat(impacts, starts) if len(starts) else idfs)
            sparse = ~is_dense
            in_sparse = np.repeat(sparse, w.dfs)
            sparse_dfs = w.dfs[sparse]
            if coded:  # every sparse list of the window at once (sorted by list, then impact)
                widths, n_table, codes, table_at, tables = encode_terms(impacts[in_sparse], sparse_dfs,
                                                                        _CODE_LIMITS)
            else:
                widths = np.full(len(sparse_dfs), RAW_WIDTH, dtype=np.int64)
                n_table = np.zeros(len(sparse_dfs), dtype=np.int64)
                codes, table_at, tables = np.zeros(0, np.int64), n_table, np.zeros(0, np.float64)
            term_width = np.full(len(w.dfs), RAW_WIDTH, dtype=np.int64)
            term_table = np.zeros(len(w.dfs), dtype=np.int64)
            term_width[sparse], term_table[sparse] = widths, n_table
            sizes = np.full(len(w.dfs), 2 * (n_rows + 1), dtype=np.int64)
            sizes[sparse] = [list_bytes(d, wd, nt, BLOCK_POSTINGS) for d, wd, nt in
                             zip(sparse_dfs.tolist(), widths.tolist(), n_table.tolist(), strict=True)]
            width_parts.append(term_width)
            table_parts.append(term_table)
            size_parts.append(sizes)
            at = j = 0  # the next sparse list's first posting among the sparse ones, its index
            for s, e, dense in zip(starts.tolist(), ends.tolist(), is_dense.tolist(), strict=True):
                if dense:  # the format stores a dense term's tf as u2: saturated
                    tfs = np.zeros(n_rows + 1, dtype="<u2")
                    tfs[chunks[s:e]] = np.minimum(w.tfs[s:e], 0xFFFF)
                    out.write(tfs.tobytes())
                    continue
                ta, nt = int(table_at[j]), int(n_table[j])
                write_list(out, int(widths[j]), tables[ta:ta + nt], codes[at:at + e - s] if coded else codes,
                           impacts[s:e], chunks[s:e], BLOCK_POSTINGS)
                at += e - s
                j += 1
            total += len(chunks)
            if on_window is not None:
                out.flush()
                on_window(sizes, is_dense)
    wrong = np.flatnonzero(positions != chunk_len)
    if len(wrong):
        c = int(wrong[0])
        raise BuildError(f"FTS5's index holds {int(positions[c])} positions for chunk {c}, its document "
                         f"size says {int(chunk_len[c])}: the index was misread")
    return _Postings(spill, _joined(df_parts, np.int64), _joined(dense_parts, np.bool_),
                     _joined(max_parts, np.float64), _joined(bytes_parts, np.int64), n_rows, total,
                     _joined(width_parts, np.int64), _joined(table_parts, np.int64),
                     _joined(size_parts, np.int64))


@contextmanager
def _compressor() -> Iterator[ThreadPoolExecutor]:
    """The compressing helper thread of a 2-thread build. When the build fails (or is interrupted)
    its queued compressions are cancelled, not run: only the one under way is waited for, so
    the error surfaces at once (leaving the pool's ``with`` waited for every queued text)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="drsearch-pack")
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _span_pairs(item: _Item) -> list[tuple[int, int]]:
    """Where a version-4 document's chunks lie in its text (UTF-8 byte spans; none for version
    2 or a document without chunks): its drlz blocks start there (chunktext.pack_joined)."""
    return [(row[5], row[6]) for row in item.chunks if len(row) == 8 and row[5] >= 0]


def _pack_text(text: str, spans: list[tuple[int, int]],
               lz: bool) -> tuple[bytes, list[int], list[tuple[int, int]]]:
    """A document's text as ``doc_texts`` stores it, each span's ``zstart`` and the spans as
    ``chunks`` stores them: version 4 (``lz``), its words joined in drlz with a block at each
    chunk start, the spans in the joined text (chunktext.pack_joined); version 2, zlib, level 6."""
    if lz:
        return pack_joined(text, spans)
    blob, zstarts = pack_text(text, [a for a, _ in spans])
    return blob, zstarts, list(spans)


class _Writing:
    """The SQL side of the build: every write to the output file, in one fixed order
    (documents and chunks in file order, FTS5's index, postings, arrays), whichever thread
    prepared the rows, so the file is the same bytes for any thread count.

    ``held``: progress is counted but not reported (a streamed build writes before the
    caller's ``on_start`` has had the total, which it gets once staging ends).
    ``compressor`` (2 threads): a thread that compresses the texts of a batch of items
    (:meth:`pack`) while this one writes them; the codecs and SQLite release the GIL, so the
    texts' compression (a fifth of this side's work) takes no time from the writes. The same
    bytes as compressing in :meth:`write`.
    """

    def __init__(self, conn: apsw.Connection, progress: Callable[[int], None] | None,
                 held: bool = False, compressor: ThreadPoolExecutor | None = None, lz: bool = True) -> None:
        self.conn = conn
        self.lz = lz  # version 4: document texts in drlz (lzcodec.py), else zlib
        self.coded = lz  # version 5 (not 2): terms rows say each list's codes (listcodes.py)
        self.progress = progress
        self.held = held
        self.compressor = compressor
        self.doc_rows: list[tuple[Any, ...]] = []
        self.collisions = 0
        self.unreported = 0

    def pack(self, items: list[_Item]) -> None:
        """Start compressing the texts of ``items`` (to be written next, in this order)."""
        if self.compressor is not None:
            for item in items:
                if item.doc is not None and item.packed is None:
                    item.packed = self.compressor.submit(_pack_text, item.text, _span_pairs(item), self.lz)

    def write(self, item: _Item) -> None:
        conn = self.conn
        if item.doc is not None:
            doc_row = item.doc[0]
            self.doc_rows.append(item.doc)
            if len(self.doc_rows) >= 256:
                conn.executemany("INSERT INTO documents VALUES(?,?,?,?,?,?,?,?)", self.doc_rows)
                self.doc_rows = []
        packed: bytes = b""
        zstarts: list[int] = []
        spans: list[tuple[int, int]] = []
        if item.doc is not None:
            given = item.packed
            if given is None:
                given = _pack_text(item.text, _span_pairs(item), self.lz)
            elif isinstance(given, Future):
                given = given.result()
            packed, zstarts, spans = given
        if item.chunks:  # FTS5 indexes them on the tokenizing side; its index is copied at the end
            rows = item.chunks
            if len(rows[0]) == 8:  # version 4: each span in the stored text and its zstart, from the packing
                at = iter(zip(spans, zstarts, strict=True))
                cut: list[tuple[Any, ...]] = []
                for row in rows:
                    if row[5] >= 0:
                        (a, b), z = next(at)
                        cut.append((*row[:5], a, b, z, row[7]))
                    else:
                        cut.append((*row[:7], -1, row[7]))
                rows = cut
            conn.executemany(f"INSERT INTO chunks VALUES({','.join('?' * len(rows[0]))})", rows)
        if item.doc is not None:
            conn.execute("INSERT INTO doc_texts VALUES(?,?)", (doc_row, packed))
            for c in item.urls:  # an earlier docid holds this URL: first docid wins
                conn.execute("INSERT OR IGNORE INTO urls VALUES(?,?)", (c, doc_row))
                if not conn.changes():
                    self.collisions += 1
        if self.progress is not None and item.chunks:
            self.unreported += len(item.chunks)
            if self.unreported >= _PROGRESS_CHUNKS and not self.held:
                self.progress(self.unreported)
                self.unreported = 0

    def end_documents(self) -> None:
        """Write the last document rows."""
        self.conn.executemany("INSERT INTO documents VALUES(?,?,?,?,?,?,?,?)", self.doc_rows)
        self.doc_rows = []
        if self.progress is not None and self.unreported:
            self.progress(self.unreported)
            self.unreported = 0

    def fts5(self, side: Path) -> None:
        """Copy FTS5's merged index from the side file into the output's FTS5 table (its
        shadow tables, row for row: the same index FTS5 would hold had the chunks been
        inserted here), then delete the side file."""
        src = apsw.Connection(str(side), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            version = "SELECT v FROM chunks_fts_config WHERE k = 'version'"
            theirs, ours = src.execute(version).fetchall(), self.conn.execute(version).fetchall()
            if theirs != ours:  # the same SQLite in both, so never; but a copied index must be readable
                raise BuildError(f"FTS5's index format differs between the side file ({theirs}) and the "
                                 f"output ({ours})")
            for name, key in _FTS_SHADOW:
                table = f"{FTS_TABLE}_{name}"
                n_cols = len(src.execute(f"PRAGMA table_info('{table}')").fetchall())
                self.conn.execute(f"DELETE FROM {table}")  # the empty index's own records
                self.conn.executemany(f"INSERT INTO {table} VALUES({','.join('?' * n_cols)})",
                                      src.execute(f"SELECT * FROM {table} ORDER BY {key}"))
        finally:
            src.close()

    def postings(self, fh: BinaryIO, first: int, sizes: Iterable[int], dense: Iterable[bool]) -> None:
        """Copy the next terms' postings BLOBs (term ids from ``first``, ``sizes`` bytes each)
        from the spill file ``fh`` into ``postings``/``dense_tfs``."""
        conn = self.conn
        for tid, (size, is_dense) in enumerate(zip(sizes, dense, strict=True), first):
            blob = fh.read(size)
            if len(blob) != size:
                raise BuildError(f"internal error: the postings spill file ends inside term id {tid}")
            conn.execute(f"INSERT INTO {'dense_tfs' if is_dense else 'postings'} VALUES(?,?)", (tid, blob))

    def terms(self, p: _Postings) -> None:
        """The ``terms`` rows, once every term's postings are copied."""
        first = 0
        for terms in p.iter_terms():  # a batch at a time: a list per column of millions is GBs
            end = first + len(terms)
            columns = [terms, range(first, end), p.df[first:end].tolist(),
                       p.dense[first:end].astype(np.int64).tolist(), p.max_impact[first:end].tolist()]
            if self.coded:  # version 5: each list's code width and table size
                columns += [p.width[first:end].tolist(), p.n_table[first:end].tolist()]
            self.conn.executemany(f"INSERT INTO terms VALUES({','.join('?' * len(columns))})",
                                  zip(*columns, strict=True))
            first = end
        if first != len(p.df):
            raise BuildError(f"internal error: the terms spill file holds {first} terms of {len(p.df)}")

    def arrays(self, t: _Tokenized) -> None:
        field_rows = ((int(i), str(d), str(u), str(ti)) for i, d, u, ti in
                      self.conn.execute("SELECT id, docid, url, title FROM documents ORDER BY id"))
        max_id = self.conn.execute("SELECT coalesce(max(id), 0) FROM documents").fetchone()
        field_offsets, field_data = field_arrays(field_rows, int(max_id[0]) if max_id else 0)
        doc, length, ordinal = (np.frombuffer(raw, dtype=np.int32).astype("<i4", copy=False)
                                for raw in (t.chunk_doc, t.chunk_len, t.chunk_ordinal))
        for name, dtype, data in (
                ("chunk_doc", "<i4", doc.data), ("chunk_len", "<i4", length.data),
                ("chunk_ordinal", "<i4", ordinal.data),
                ("doc_field_offsets", "<i8", field_offsets.astype("<i8", copy=False).data),
                ("doc_fields", "u1", memoryview(field_data))):
            self._blob(name, dtype, data.cast("B"))

    def _blob(self, name: str, dtype: str, data: memoryview) -> None:
        """One ``arrays`` row, its BLOB written in place a piece at a time: bound as a value,
        SQLite copies it twice (the bound value, the record), and the document fields'
        table made the writing side's peak (+0.57 GB of a 0.85 GB peak at 2,000,000
        passages). The same rows and pages as inserting it whole."""
        conn = self.conn
        conn.execute("INSERT INTO arrays VALUES(?, ?, zeroblob(?))", (name, dtype, len(data)))
        blob = conn.blob_open("main", "arrays", "data", conn.last_insert_rowid(), True)
        try:
            for at in range(0, len(data), _BLOB_PIECE):
                blob.write(data[at:at + _BLOB_PIECE])
        finally:
            blob.close()


def _write_documents(
    conn: apsw.Connection,
    scratch: apsw.Connection,
    tmpdir: Path,
    settings: BuildSettings,
    progress: Callable[[int], None] | None,
    prechunked: bool = False,
    passages: bool = False,
) -> dict[str, Any]:
    """Write documents, chunks, FTS5, postings and arrays from the staged input. With
    ``settings.threads`` = 2 the tokenizing side (cutting, FTS5's indexing and merge, the
    postings) runs in a worker process, feeding this side's writes through a bounded pipe (a
    process, not a thread: this side makes tens of thousands of short SQLite calls, and each
    would wait for the GIL held by a tokenizing thread). The writes are the same, in the same
    order."""
    writer = _Writing(conn, progress, lz=settings.chunk_text != "stored")
    spill = tmpdir / "postings.bin"
    if settings.threads == 1:
        tok = _Tokenizing(scratch, tmpdir, settings, prechunked, passages=passages)
        for item in tok.items():
            writer.write(item)
        done = tok.finish(spill)
        writer.end_documents()
        return _write_rest(writer, done)
    scratch.close()  # the worker opens the staged input itself (its lock is exclusive)
    with _compressor() as writer.compressor:
        worker = _Worker(tmpdir, settings, prechunked, spill, streamed=False,  # starts nothing
                         passages=passages)
        try:  # started inside: an interrupt at any point after leaves no process behind
            worker.start()
            return _write_rest(writer, worker.finish(writer), copied=True)
        finally:
            worker.close()


def _write_rest(writer: _Writing, done: _Tokenized, copied: bool = False) -> dict[str, Any]:
    """FTS5's index, the postings (unless ``copied`` already), terms and arrays, once the
    documents are written; the build's counts."""
    p = done.postings
    if not copied:
        writer.fts5(done.side)
        with open(p.spill, "rb") as fh:
            writer.postings(fh, 0, p.blob_bytes.tolist(), p.dense.tolist())
    done.side.unlink()
    p.spill.unlink()
    writer.terms(p)
    _terms_path(p.spill).unlink()
    writer.arrays(done)
    return {**done.stats, "url_collisions": writer.collisions}


def _stream(conn: apsw.Connection, scratch: apsw.Connection, stager: _Stager, docs: Iterator[object],
            tmpdir: Path, settings: BuildSettings, progress: Callable[[int], None] | None,
            on_start: Callable[[int], None] | None) -> dict[str, Any] | None:
    """A 2-thread build of documents that overlaps staging with tokenizing and writing.

    The worker starts at once (its interpreter's start-up is hidden too) and reads each batch
    of staged documents as soon as it is committed; between documents this side writes what
    the worker has sent, never waiting for it, so staging fills this side's idle time instead
    of running before everything else. This needs the input in ascending docid order (the
    order the file is written in); at the first document out of that order, it commits what
    is staged and returns None: the caller discards what was written, stages the rest and
    builds from the staged input. Otherwise it returns the build's counts.
    """
    spill = tmpdir / "postings.bin"
    with _compressor() as compressor:
        worker = _Worker(tmpdir, settings, False, spill, streamed=True,  # starts nothing
                         passages=stager.passages)
        try:  # started inside: an interrupt at any point after leaves no process behind
            worker.start()
            return _stream_with(scratch, stager, docs, _Writing(conn, progress, True, compressor,
                                                                  settings.chunk_text != "stored"),
                                worker, on_start)
        finally:
            worker.close()


def _stream_with(scratch: apsw.Connection, stager: _Stager, docs: Iterator[object], writer: _Writing,
                 worker: _Worker, on_start: Callable[[int], None] | None) -> dict[str, Any] | None:
    """:func:`_stream`'s loop, with its writing side and its started worker (closed by the
    caller)."""
    scratch.execute("BEGIN")
    batch = 0
    per_commit = _STAGE_COMMIT_PASSAGES if stager.passages else _STAGE_COMMIT_DOCS
    for raw in docs:
        if stager.add(raw):
            if not stager.ascending:
                scratch.execute("COMMIT")
                return None
            batch += 1
            if batch >= per_commit:
                scratch.execute("COMMIT")
                worker.wake()
                scratch.execute("BEGIN")
                batch = 0
        while worker.ready():
            worker.write_items(writer)
    scratch.execute("CREATE TABLE stage_done(x)")  # the worker's sign that nothing more comes
    scratch.execute("COMMIT")
    scratch.close()  # its page cache is not needed any more (the worker reads with its own)
    worker.wake()
    if on_start is not None:
        on_start(stager.total)
    writer.held = False
    return _write_rest(writer, worker.finish(writer), copied=True)


def tokenize_worker(tmpdir: Path, settings: BuildSettings, prechunked: bool, spill: Path,
                    out: Connection, control: int | None = None, passages: bool = False) -> None:
    """The worker process's side (``python -m drsearch.index._buildworker``): cut and index
    the staged input, sending items in batches on ``out``, then ``("done", None)``, then merge
    FTS5's index, derive the postings and send ``("result", _Tokenized)``; a failure sends
    ``("error", message)``.
    Sends block while the pipe is full: the writing side sets the pace, memory stays bounded.
    ``control``: a streamed build's wake-up pipe (see ``_Tokenizing``); ``passages``: the
    staged input is a passage file's (see ``_PASSAGES_DDL``)."""
    try:
        scratch = apsw.Connection(str(tmpdir / "stage.sqlite3"), flags=apsw.SQLITE_OPEN_READONLY)
        tok = _Tokenizing(scratch, tmpdir, settings, prechunked, control, passages)
        prechunked = tok.prechunked
        batch: list[_Item] = []
        size = 0
        limit = 1  # items per batch: 1, 2, 4, ... _BATCH_ITEMS, so the writing side starts early
        for item in tok.items():
            packed = b""
            if prechunked and item.doc is not None:
                # A pre-chunked build's documents come before any chunk: this side has no
                # tokenizing to do meanwhile, while the writing side's codec thread was its
                # bottleneck (it waited 4 of 15 s on it at 100,000 passages).
                item.packed = _pack_text(item.text, _span_pairs(item), settings.chunk_text != "stored")
                packed, item.text = item.packed[0], ""
            batch.append(item)
            size += len(item.text) + len(packed) + sum(len(c[-1] or "") for c in item.chunks)
            if len(batch) >= limit or size >= _BATCH_BYTES:
                out.send(("items", batch))
                batch, size = [], 0
                limit = min(2 * limit, _BATCH_ITEMS)
        out.send(("items", batch))
        out.send(("done", None))
        done = tok.finish(spill, lambda n_rows: out.send(("merged", n_rows)),
                          lambda sizes, dense: out.send(("postings", (sizes, dense))))
        out.send(("result", done))
        scratch.close()
    except BaseException as e:  # the writing side raises it as a BuildError
        out.send(("error", " ".join(f"{type(e).__name__}: {e}".split())))


class _Worker:
    """The tokenizing side in a worker process; its items are written here, in order.

    A plain child interpreter rather than ``multiprocessing``: spawning would re-run the
    caller's main script (a library must not require its ``__main__`` guard), forking would
    copy this process's threads' locks. ``streamed``: it reads documents while they are
    staged, woken by :meth:`wake` after each commit (see ``_Tokenizing._staged``).
    """

    def __init__(self, tmpdir: Path, settings: BuildSettings, prechunked: bool, spill: Path,
                 streamed: bool, passages: bool = False) -> None:
        """Only records the arguments: :meth:`start` starts the process, inside the caller's
        ``try`` whose ``finally`` calls :meth:`close` (so a Ctrl-C arriving right after this
        returns, or anywhere in :meth:`start`, leaves no process running)."""
        self.args = (tmpdir, settings, prechunked, spill)
        self.streamed = streamed
        self.passages = passages
        self.log = tmpdir / "worker.log"  # its stderr: a crash's traceback becomes one line of our error
        self.proc: subprocess.Popen[bytes] | None = None
        self.fds: list[int] = []  # pipe ends held here until handed over or closed
        self.pipe: Connection | None = None
        self.control = -1

    def start(self) -> None:
        """Start the worker process. Raises BuildError when it cannot be started."""
        tmpdir, settings, prechunked, spill = self.args
        streamed = self.streamed
        rfd, wfd = os.pipe()
        self.fds += [rfd, wfd]
        ctl_r = -1
        if streamed:
            ctl_r, self.control = os.pipe()
            self.fds.append(ctl_r)
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # the directory drsearch is imported from
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
        try:
            with open(self.log, "wb") as err:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "drsearch.index._buildworker", str(wfd), str(tmpdir), str(spill),
                     "passages" if self.passages else str(int(prechunked)), settings.model_dump_json(),
                     str(ctl_r)],
                    pass_fds=(wfd, ctl_r) if streamed else (wfd,), env=env, stdin=subprocess.DEVNULL,
                    stderr=err)
        except OSError as e:
            raise BuildError(f"cannot start the tokenizing worker process ({sys.executable}): {e}") from e
        finally:  # the child's ends: it holds its own copies now
            for fd in (wfd, ctl_r) if streamed else (wfd,):
                self.fds.remove(fd)
                os.close(fd)
        if streamed:
            os.set_blocking(self.control, False)
        self.pipe = Connection(rfd, writable=False)
        self.fds.remove(rfd)

    def wake(self) -> None:
        """Tell the worker that more staged documents are committed (never blocks)."""
        try:
            os.write(self.control, b"+")
        except BlockingIOError:  # the pipe is full of wake-ups the worker has yet to read
            pass
        except BrokenPipeError:  # it has exited: the next receive says why
            pass

    def _pipe(self) -> Connection:
        if self.pipe is None:
            raise BuildError("internal error: the tokenizing worker was not started")
        return self.pipe

    def ready(self) -> bool:
        """Whether a message is waiting (or the worker has gone)."""
        return self._pipe().poll(0)

    def _died(self) -> BuildError:
        lines = self.log.read_bytes().decode("utf-8", "replace").strip().splitlines()
        last = f": {lines[-1].strip()}" if lines else ""
        code = self.proc.wait() if self.proc is not None else None
        return BuildError(f"the tokenizing worker process died (exit code {code}){last}")

    def receive(self) -> tuple[str, Any]:
        pipe = self._pipe()
        while not pipe.poll(1.0):
            if self.proc is not None and self.proc.poll() is not None and not pipe.poll(0):
                raise self._died()
        try:
            kind, value = pipe.recv()
        except EOFError:
            raise self._died() from None
        if kind == "error":
            raise BuildError(f"the tokenizing worker process failed: {value}")
        return str(kind), value

    def write_items(self, writer: _Writing) -> None:
        """Receive one batch of items and write it."""
        kind, items = self.receive()
        if kind != "items":
            raise BuildError(f"internal error: the tokenizing worker sent {kind!r} before every document")
        writer.pack(items)
        for item in items:
            writer.write(item)

    def finish(self, writer: _Writing) -> _Tokenized:
        """Write every item still to come; then copy the worker's merged FTS5 index while it
        derives the postings, and each window of postings as it is spilled; its postings and
        counts (for the rest of the writes)."""
        while (msg := self.receive())[0] == "items":
            writer.pack(msg[1])
            for item in msg[1]:
                writer.write(item)
        if msg[0] != "done":
            raise BuildError(f"internal error: the tokenizing worker sent {msg[0]!r}")
        writer.end_documents()  # while the worker merges FTS5's index
        kind, _ = self.receive()
        if kind != "merged":
            raise BuildError(f"internal error: the tokenizing worker sent {kind!r}")
        tmpdir, _, _, spill = self.args
        writer.fts5(_side_path(tmpdir))  # while the worker reads the same (committed) index
        first = 0
        fh: BinaryIO | None = None  # opened at the first window: the worker creates the file then
        try:
            while (msg := self.receive())[0] == "postings":
                sizes, dense = msg[1]
                fh = fh or open(spill, "rb")  # noqa: SIM115 - closed in finally
                writer.postings(fh, first, sizes.tolist(), dense.tolist())
                first += len(sizes)
        finally:
            if fh is not None:
                fh.close()
        kind, done = msg
        if kind != "result" or not isinstance(done, _Tokenized):
            raise BuildError(f"internal error: the tokenizing worker sent {kind!r}")
        if first != len(done.postings.df):
            raise BuildError(f"internal error: the tokenizing worker sent {first} terms' postings of "
                             f"{len(done.postings.df)}")
        if self.proc is None or self.proc.wait() != 0:
            code = None if self.proc is None else self.proc.returncode
            raise BuildError(f"the tokenizing worker process exited with code {code}")
        return done

    def close(self) -> None:
        """Stop the process (if started) and close every pipe end; safe at any point of
        :meth:`start` and more than once."""
        if self.pipe is not None:
            owned = self.pipe.fileno()  # the pipe closes its own end (still listed if interrupted)
            self.pipe.close()
            self.pipe = None
            self.fds = [fd for fd in self.fds if fd != owned]
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        if self.control >= 0:
            os.close(self.control)
            self.control = -1
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
            self.proc.wait()


def _meta(settings: BuildSettings, n_docs: int, stats: dict[str, Any],
          prechunked: bool = False) -> dict[str, Any]:
    if prechunked:  # the chunks came as given: no window rule to record
        return {**_meta(settings, n_docs, stats), "chunking": "pre-chunked", "chunk_words": None,
                "chunk_stride": None, "chunk_overlap": None}
    return {
        "format": "drsearch-index",
        "schema_version": _schema_version(settings),
        "block_postings": BLOCK_POSTINGS,
        "application_id": APPLICATION_ID,
        "frozen": True,
        "tokenizer": settings.fts5_tokenize,
        "chunk_words": settings.chunk_words,
        "chunk_stride": settings.chunk_stride,
        "chunk_overlap": settings.chunk_words - settings.chunk_stride,
        "bm25": {"k1": settings.k1, "b": settings.b, "idf_floor": 1e-6},
        "documents": n_docs,
        "doc_text_codec": DOC_TEXT_CODEC,
        "build_tool": f"drsearch {__version__}",
        "sqlite_version": apsw.sqlite_lib_version(),
        "apsw_version": apsw.apsw_version(),
        **stats,
    }


__all__ = ["PASSAGE_URL_PREFIX", "BuildReport", "SourceChunk", "build", "is_passage", "passage_parts",
           "read_jsonl", "validate_document"]
