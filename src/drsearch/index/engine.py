"""The search engine over one frozen index file.

``Engine.open(path, blocklist)`` opens the file read-only and immutable (a release's database
with the release's own blocklist unless told otherwise: :mod:`drsearch.index.releases`),
checks its application id and schema version, and loads the small per-chunk arrays. ``search``
ranks documents by their best chunk exactly as FTS5's ``bm25()`` would, but from
precomputed posting lists (see :mod:`drsearch.index.scoring`); ``open`` returns a
document by docid or by any spelling of any of its URLs. Blocked documents do not exist
for either, and a word only they contain is an unknown word (:mod:`.hidden_terms`). The
engine never writes to the file.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import apsw
import numpy as np
import numpy.typing as npt

from ..contract.errors import (
    BlocklistError,
    CorruptIndexError,
    DocumentNotFoundError,
    IncompatibleIndexError,
    InvalidInputError,
    InvalidRequestError,
    NotADatabaseError,
    QueryTimeoutError,
)
from ..contract.models import Document, Hit, SearchResult
from ..contract.request import (
    DEFAULT_TIME_LIMIT_S,
    MAX_K,
    MAX_QUERY_TERMS,
    MAX_RUN_K,
    check_k,
    too_many_terms,
)
from . import chunktext, listcodes
from . import native as kernel
from .blobs import Arena, MappedColumn, MappedFile, MappedRows, open_blob, read_blob
from .blocklist import BlockList
from .doctable import DocTable, PagedFields
from .hidden_terms import absent_keys, blocked_only_terms
from .listcodes import RAW_WIDTH, check_layout, list_bytes
from .quantized import QUANT_MAX_LISTS, QuantLists
from .query import ParsedQuery, QueryTerm, parse_query
from .releases import BlocklistChoice, ReleasePolicy, choose_blocklist, locate
from .schema import (
    APPLICATION_ID,
    READABLE_VERSIONS,
    REQUIRED_TABLES,
    SHARD_SCHEMA_VERSION,
    SHARD_VERSIONS,
    SPAN_TEXT_VERSION,
    chunk_text_source,
    has_list_codes,
)
from .scoring import (
    IDF_FLOOR,
    DenseTerm,
    ListTerm,
    PagedTerm,
    Pruning,
    Scorer,
    Scratch,
    SparseTerm,
    Term,
    bm25_idf,
)
from .snippet import SNIPPET_CHARS, SnippetMaker, stem_of
from .text import Tokenizer
from .urls import canonicalize_url

# The limits (MAX_K, MAX_RUN_K, the query caps, the default time limit) are the request
# contract's (drsearch.contract.request). Output buffers hold every chunk, so any k fits.
_log = logging.getLogger("drsearch.index.releases")  # the release rule's warnings
_MMAP_BYTES = 1 << 40  # SQLite caps this at its compile-time maximum

# A query's terms in one round trip, with the posting lists of up to INLINE_POSTINGS postings
# (most of a query's lists: a few KB each) in the same rows; longer lists are read with blob
# I/O into the per-thread arena instead (no fresh multi-megabyte allocation per query). The
# CASE keeps SQLite from reading a long list's pages at all. Parameter 1 is the threshold;
# the terms follow as parameters 2.. up to _PLACEHOLDER_TERMS terms (one statement per
# count, in apsw's statement cache), beyond that as one JSON array (parameter 2).
INLINE_POSTINGS = 2048
_PLACEHOLDER_TERMS = 32
# With the C kernel, a posting list of more than a page's bytes is ranked where it lies in the
# file's pages (PagedTerm), not copied: copying a query's lists (1.95 MB at DR-256 scale) took
# ~40% of a ranked query. Where each list's pieces lie is found once (walking its overflow
# chain) and kept with the term, by name, as its PagedTerm (nothing of it changes in a frozen
# file), and so is a clamped term's row: a query whose terms are all kept needs no term lookup
# and makes no sparse term's object, the Python a search runs with the GIL held (docs/ENGINE.md,
# "Threads"). 8 bytes per page of list plus the entry, up to _KEPT_TERMS_BYTES per engine (then
# the cache starts over: bounded memory, never a different answer). Shorter lists are copied (a
# few KB: cheaper than a table each), and a copy of at most PAGED_LIST_BYTES is kept too, as its
# SparseTerm over read-only arrays: a rare name (df ~10, agents' queries carry names and repeat
# them) then costs no term lookup, no read and no arrays after its first query.
PAGED_LIST_BYTES = 4096
_KEPT_TERMS_BYTES = 16 << 20
# an entry's own cost beside its table: the PagedTerm, its reader (a partial and its
# arguments), the name and a dict slot (sys.getsizeof: ~450 bytes for a 10-letter term)
_KEPT_ENTRY_BYTES = 512
# a kept copy's cost beside its bytes: the SparseTerm, its buffer's array and the three views
# into it (sys.getsizeof: ~700 bytes), the name and a dict slot
_KEPT_COPY_BYTES = 1024
# Each query term's (snippet stem, weight) (stem_of, its IDF), kept for the terms' next
# queries: the snippets' set-up then costs a dict lookup a term, time a search thread holds the
# GIL. A term's df is the frozen file's, so an entry never changes; at this many entries the
# dict starts over (bounded memory, never a different snippet).
_SNIPPET_STEMS_MAX = 1 << 16
# Queries parsed before (Engine.parse), by their raw text: agents repeat queries, and a parse
# costs ~2 us of a one-term search's ~9 with the GIL held (the tokenizer's call, a QueryTerm a
# term). The parse is the tokenizer's alone (one per engine, a frozen file's), so an entry
# never changes; queries of at most _PARSED_QUERY_CHARS characters are kept, and at
# _PARSED_MAX entries the dict starts over (at most ~2 MB, never a different parse).
_PARSED_MAX = 4096
_PARSED_QUERY_CHARS = 256
# (term, id, df, dense, max_impact, the list if short, code width, table size): a file before
# schema version 5 has no width and n_table columns, its lists are raw (listcodes.py).
_TERMS_SELECT = (
    "SELECT t.term, t.id, t.df, t.dense, t.max_impact, CASE WHEN t.dense = 0 AND t.df <= ?1 THEN "
    "p.data END, {codes} FROM terms AS t LEFT JOIN postings AS p ON t.dense = 0 AND p.id = t.id "
    "WHERE t.term IN ")


def _terms_sql(codes: str) -> tuple[list[str], str]:
    """The term-row statements (by term count, then for many terms by a JSON array)."""
    select = _TERMS_SELECT.format(codes=codes)
    return ([select + "(" + ", ".join(f"?{i + 2}" for i in range(n)) + ")"
             for n in range(_PLACEHOLDER_TERMS + 1)], select + "(SELECT value FROM json_each(?2))")


_TERMS_SQL, _TERMS_SQL_JSON = _terms_sql("t.width, t.n_table")
_TERMS_SQL_RAW, _TERMS_SQL_JSON_RAW = _terms_sql(f"{RAW_WIDTH}, 0")
_DOC_COLUMNS = ("d.id, d.docid, d.url, d.canonical_url, d.title, t.text, d.metadata, d.n_words, "
                "d.n_chunks FROM documents AS d JOIN doc_texts AS t ON t.id = d.id")
# One row either way: the document's rowid, or 0 (never a rowid) when there is none, so a
# hit and a miss hand back the same shape of result.
_ID_BY_DOCID = "SELECT coalesce((SELECT id FROM documents WHERE docid = ?), 0)"
_ID_BY_URL = "SELECT coalesce((SELECT doc FROM urls WHERE canonical_url = ?), 0)"

# The meta values the engine reads, with their JSON types (bool is not an int here).
_META_TYPES: dict[str, type | tuple[type, ...]] = {
    "tokenizer": str, "documents": int, "indexed_documents": int, "empty_documents": int,
    "chunks": int, "tokens": int, "vocabulary": int, "postings": int, "dense_terms": int,
    "content_identity": str, "schema_version": int, "chunk_words": int, "chunk_stride": int,
    "chunk_overlap": int, "bm25": dict, "build_tool": str, "sqlite_version": str,
}
# A pre-chunked index (chunks taken over from another FTS5 table) records these as null.
_PRECHUNKED_NULL = frozenset({"chunk_words", "chunk_stride", "chunk_overlap"})
# The arrays the engine reads, with the dtypes build() writes (optional ones may be absent).
_ARRAY_DTYPES = {"chunk_doc": "<i4", "chunk_len": "<i4", "chunk_ordinal": "<i4",
                 "doc_field_offsets": "<i8", "doc_fields": "u1"}
_OPTIONAL_ARRAYS = frozenset({"doc_field_offsets", "doc_fields"})
# What damaged bytes raise while a request is answered: SQLite's own errors, a flipped bit
# in a deflate stream or in UTF-8, malformed JSON metadata (a ValueError), and the kernel's
# checks of a posting list (ValueError).
_CORRUPTION = (apsw.Error, zlib.error, UnicodeDecodeError, ValueError, IndexError,
               IncompatibleIndexError)


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """How an engine reads a query's postings and makes its hits: the defaults are what every
    user gets (the fastest routes); tests and probes pass others to compare the routes, which
    return the same results, bit for bit. Each route a switch forces is also the one a default
    engine takes where the faster one cannot (no kernel, a one-term query, ...).

    ``inline_postings``: posting lists of up to this many postings come with the term rows,
    longer ones by the page reader or blob I/O (INLINE_POSTINGS; 0: every list read apart).
    ``paged_list_bytes``: with the kernel, lists of more than this many bytes are ranked where
    they lie in the file's pages (PAGED_LIST_BYTES; 0 pages every list, a huge value none).
    ``paged_dense``: with the kernel, clamped terms' tfs are read from the pages when
    rescoring (False: picked or loaded by blob I/O, the path without the kernel).
    ``texts_with_ranking``: with the kernel, a complete search's chunk texts and snippets are
    made in the call that ranks them (False: in one call after it).
    ``search_in_one_call``: with those, a complete search of posting lists is made in one
    kernel call (ranking, texts, snippets and hits; False: call by call).
    ``hide_blocked_only_terms``: a term only blocked chunks hold is looked up as an unknown
    word (SERVER.md, "Blocked-only words: timing"; False: under its own name, the route the
    tests compare it with: the same rankings and scores, bit for bit).
    ``quantized``: :meth:`Engine.rank` traverses 8-bit quantised impacts and rescores the
    survivors exactly (drsearch.index.quantized; lists quantised on first use and kept in
    memory): the same rankings and scores, bit for bit; an option while it is not faster
    (docs/ENGINE.md, "Traversal over quantised impacts")."""

    inline_postings: int = INLINE_POSTINGS
    paged_list_bytes: int = PAGED_LIST_BYTES
    paged_dense: bool = True
    texts_with_ranking: bool = True
    search_in_one_call: bool = True
    hide_blocked_only_terms: bool = True
    quantized: bool = False


DEFAULT_OPTIONS = EngineOptions()


# SearchResult(query, k, hits) made without its frozen dataclass __init__ (an
# object.__setattr__ a field through a Python frame: ~0.6 us, a tenth of a one-term search):
# its slots set by their descriptors, as that __init__ sets them; the same object.
_new_result = object.__new__
_set_query, _set_k, _set_hits = (getattr(SearchResult, f).__set__ for f in ("query", "k", "hits"))


def _result(query: str, k: int, hits: list[Hit]) -> SearchResult:
    result: SearchResult = _new_result(SearchResult)
    _set_query(result, query)
    _set_k(result, k)
    _set_hits(result, hits)
    return result


def _connect(path: Path) -> apsw.Connection:
    if not path.is_file():
        raise NotADatabaseError(f"{path}: no such file")
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro&immutable=1"
    try:
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        conn.execute("PRAGMA query_only=1")
        conn.execute(f"PRAGMA mmap_size={_MMAP_BYTES}")
        app_id = conn.execute("PRAGMA application_id").get
        version = conn.execute("PRAGMA user_version").get
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")}
    except apsw.Error as e:
        raise NotADatabaseError(f"{path}: not a drsearch index ({e.__class__.__name__}: {e})") from e
    if app_id != APPLICATION_ID:
        conn.close()
        raise IncompatibleIndexError(
            f"{path}: not a drsearch index (application_id {app_id:#x}, expected {APPLICATION_ID:#x})"
        )
    missing = sorted(set(REQUIRED_TABLES) - tables)
    if missing:
        conn.close()
        raise IncompatibleIndexError(
            f"{path}: damaged or incomplete drsearch index (missing tables: {', '.join(missing)})")
    if version not in READABLE_VERSIONS:
        conn.close()
        raise IncompatibleIndexError(
            f"{path}: index schema version {version}, this drsearch reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    chunktext.register(conn)  # the chunk_texts view of a version-4 file calls it
    return conn


def _sparse(name: str, df: int, top: float, buf: Any, nbytes: int, width: int = RAW_WIDTH,
            n_table: int = 0, arena: Arena | None = None) -> SparseTerm:
    """A posting BLOB's bytes (its table and codes or its float64 impacts, df uint32 rowids, its
    block maxima: listcodes.py) as a SparseTerm of views into them (a coded list's impacts:
    ``table[codes]``, in ``arena`` when given, else a new array). ValueError for a code beyond
    its table."""
    out = None
    if arena is not None and width != RAW_WIDTH:
        out = arena.take(8 * df).view(np.float64)
    rows, impacts, block_max = listcodes.decode(buf, df, width, n_table, nbytes, out)
    return SparseTerm(name, df, rows, impacts, top, block_max)


class Engine:
    """Read-only search over a frozen drsearch index. Thread-safe for concurrent searches."""

    def __init__(self, conn: apsw.Connection, path: Path, blocklist: BlockList,
                 time_limit_s: float, native: bool | None = None, pruning: Pruning = "auto",
                 options: EngineOptions = DEFAULT_OPTIONS) -> None:
        self.path = path
        self.options = options
        self.blocklist = blocklist
        # what Engine.open decided (releases.choose_blocklist); a bare engine: the list as given
        self.blocklist_choice = BlocklistChoice(blocklist, "file" if blocklist.docids else "none")
        self.time_limit_s = time_limit_s
        self._conn = conn  # the opening thread's connection; other threads get their own
        self._owner = threading.get_ident()
        self._extra_conns: list[apsw.Connection] = []
        self._lock = threading.Lock()
        self.meta: dict[str, Any] = _read_meta(conn)
        # Version 4 keeps a chunk as a span of its document's text (chunktext.py): its texts are
        # read through the chunk_texts view, not from a TEXT column in the pages.
        self.schema_version: int = conn.execute("PRAGMA user_version").get
        self._text_source = chunk_text_source(self.schema_version)
        # Version 5's lists may be coded (listcodes.py): the terms rows say how.
        self._coded = has_list_codes(self.schema_version)
        # Schema version 2 stores block maxima after each long posting list; a version-1 file
        # has none and ranks (exactly) with the per-term bounds only.
        self.block_postings: int | None = _block_postings(conn, self.meta)
        self.tokenizer = Tokenizer(conn, self.meta["tokenizer"])
        with_c = self._kernel = kernel.available()
        # With the kernel, the document fields stay in the file's pages (PagedFields).
        raw, arrays = _read_arrays(conn, self.meta, ("doc_fields",) if with_c else ())
        self._chunk_doc: npt.NDArray[np.int32] = arrays["chunk_doc"]
        self._chunk_ordinal: npt.NDArray[np.int32] = arrays["chunk_ordinal"]
        # A shard (drsearch.index.shards) ranks with the whole corpus' statistics: its avgdl
        # for clamped terms' impacts, its df (shard_terms) for snippet weights.
        self.shard: dict[str, Any] | None = _read_shard(conn, self.meta)
        self.scorer = Scorer(self._chunk_doc, arrays["chunk_len"],
                             self.meta["bm25"]["k1"], self.meta["bm25"]["b"], native=native,
                             pruning=pruning, block_postings=self.block_postings,
                             avgdl=None if self.shard is None else _corpus_avgdl(self.shard))
        if self.shard is not None and blocklist.sha256 != self.shard["blocklist"]["sha256"]:
            raise BlocklistError(
                f"{path} is shard {self.shard['index']} of a split made with the blocklist of SHA-256 "
                f"{self.shard['blocklist']['sha256']}; it was opened with {blocklist.sha256} "
                f"({blocklist.source or 'no blocklist'}): serve every shard with the split's list, or "
                "split again with this one (drsearch shard --blocked-docids)")
        self._blocked_docs, self._blocked_chunks, self.blocked_missing = self._resolve_blocklist(blocklist)
        # Unknown (rowid 0) and blocked document rowids, tested in one set lookup, so that
        # opening either takes the same path to the same exception.
        self._hidden: frozenset[int] = frozenset({0, *self._blocked_docs})
        # Terms only blocked chunks hold -> the absent key each is looked up under, so that a
        # query of one costs what a query of an unknown word costs (hidden_terms; SERVER.md).
        self._hidden_terms: dict[str, str] = absent_keys(
            conn, blocked_only_terms(conn, self.tokenizer, self._blocked_chunks))
        self._local = threading.local()
        # Posting lists longer than EngineOptions.inline_postings are copied from the file's
        # own pages, all of a query's in one C call without the GIL (blobs.MappedFile), when
        # the kernel is built; else by blob I/O.
        # The chunks' texts of a complete search come from the pages too (read_texts).
        self._file: MappedFile | None = MappedFile(path, conn) if with_c else None
        self._pages: MappedColumn | None = None
        self._dense_tfs: MappedColumn | None = None
        self._dense_tables: dict[int, bytes] = {}  # clamped term rowid -> its tf BLOB's pieces
        self._chunk_texts: MappedColumn | None = None
        self._term_rows: MappedRows | None = None
        if self._file is not None:
            try:
                self._pages = self._file.column("postings", "data")
                self._dense_tfs = self._file.column("dense_tfs", "tfs")
                if self.schema_version < SPAN_TEXT_VERSION:
                    self._chunk_texts = self._file.column("chunks", "text")
                elif kernel.span_texts():  # cut from the documents' text in C (else in Python)
                    self._chunk_texts = self._file.span_texts()
                self._term_rows = self._file.rows(
                    "terms", ("id", "df", "dense", "max_impact", "width", "n_table") if self._coded
                    else ("id", "df", "dense", "max_impact"), "iiirii" if self._coded else "iiir")
            except IncompatibleIndexError:
                self._file.close()
                raise
        # term -> its PagedTerm, a short list's SparseTerm, or a clamped term's (row, df)
        # (PAGED_LIST_BYTES)
        self._kept_terms: dict[str, ListTerm | tuple[int, int]] = {}
        self._kept_bytes = 0
        self._snippet_stems: dict[QueryTerm, tuple[str, float]] = {}
        self._parsed: dict[str, ParsedQuery] = {}  # (_PARSED_MAX)
        self._hit_buffers_made: tuple[Any, ...] | None = None
        self._docs: DocTable | None = None
        if "doc_fields" in raw and "doc_field_offsets" in arrays:
            _, data, rowid, nbytes = raw["doc_fields"]
            fields: bytes | PagedFields
            if data is None:
                assert self._file is not None
                try:
                    fields = PagedFields(self._file.pages,
                                         self._file.column("arrays", "data").pieces(rowid))
                except ValueError as e:
                    raise IncompatibleIndexError(f"damaged array 'doc_fields' ({e})") from None
                if len(fields) != nbytes:
                    raise IncompatibleIndexError("damaged array 'doc_fields' (its pieces hold "
                                                 f"{len(fields)} bytes, not {nbytes})")
            else:
                fields = data
            self._docs = DocTable(fields, arrays["doc_field_offsets"])

    @classmethod
    def open(cls, path: str | os.PathLike[str], blocklist: BlockList | None = None, *,
             release_blocklist: ReleasePolicy = "apply",
             time_limit_s: float = DEFAULT_TIME_LIMIT_S, native: bool | None = None,
             pruning: Pruning = "auto", options: EngineOptions = DEFAULT_OPTIONS) -> Engine:
        """Open a frozen index. Raises NotADatabaseError / IncompatibleIndexError.

        ``path``: the index file, or a release directory (its ``search/corpus.sqlite3``).
        A release's database gets the release's own blocklist (:mod:`drsearch.index.releases`):
        ``blocklist`` None applies it, a list with other bytes raises BlocklistError unless
        ``release_blocklist="override"``; ``"none"`` opens it with no blocklist (both logged
        as warnings on the ``drsearch`` logger); ``"ignore"`` skips the rule (tools that
        check the whole file). A list read from a file or bytes with no docids raises
        BlocklistError (``BlockList.empty()`` means no blocklist). The choice is
        kept as ``blocklist_choice`` (origin, release, its list's SHA-256).
        ``native``: rank with the C loops (None: when built, the default; False: numpy only).
        ``pruning``: in C, ``always`` skips postings that cannot reach the top k (exact
        MaxScore), ``never`` scores them all, ``auto`` (the default) picks per query what is
        cheaper (:class:`~drsearch.index.scoring.Scorer`); the results are the same, bit for bit.
        ``options``: the routes to take (:class:`EngineOptions`; tests and probes), the same
        results again.
        """
        p, release = locate(path)
        choice = choose_blocklist(release, blocklist, release_blocklist)
        conn = _connect(p)
        try:
            engine = cls(conn, p, choice.blocklist, time_limit_s, native, pruning, options)
        except IncompatibleIndexError as e:
            conn.close()
            raise IncompatibleIndexError(f"{p}: {e.message}") from e
        except BlocklistError:  # a shard opened with a list other than its split's
            conn.close()
            raise
        except (apsw.Error, KeyError, ValueError, TypeError, IndexError, AttributeError,
                InvalidInputError) as e:  # InvalidInputError: e.g. a tokenizer FTS5 lacks
            conn.close()
            raise IncompatibleIndexError(f"{p}: damaged or incomplete drsearch index "
                                         f"({e.__class__.__name__}: {e})") from e
        engine.blocklist_choice = choice
        if choice.warning:  # loud: with no logging set up, Python prints it on stderr
            _log.warning("drsearch: WARNING: %s", choice.warning)
        return engine

    def close(self) -> None:
        with self._lock:
            for conn in self._extra_conns:
                conn.close()
            self._extra_conns.clear()
        if self._file is not None:
            self._file.close()
        self._conn.close()

    def _db(self) -> apsw.Connection:
        """This thread's connection (apsw connections must not be used by two threads at once)."""
        if threading.get_ident() == self._owner:
            return self._conn
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = _connect(self.path)
            self._local.tokenizer = Tokenizer(conn, self.meta["tokenizer"])
            with self._lock:
                self._extra_conns.append(conn)
        return conn

    def _tokenizer(self) -> Tokenizer:
        if threading.get_ident() == self._owner:
            return self.tokenizer
        self._db()
        return self._local.tokenizer  # type: ignore[no-any-return]

    @property
    def passages(self) -> bool:
        """True for an index built from passage lines (``{"id", "contents"}``, as Search-R1 and
        Pyserini ship corpora): each document is one chunk holding its ``contents`` whole."""
        return bool(self.meta.get("source_shape") == "passages")

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- blocklist -----------------------------------------------------------------------
    def _resolve_blocklist(self, bl: BlockList) -> tuple[frozenset[int], npt.NDArray[np.bool_] | None,
                                                         tuple[str, ...]]:
        """Document rows and chunk mask of the blocked docids, and the listed docids that
        are not documents of this corpus (sorted)."""
        if not len(bl):
            return frozenset(), None, ()
        found = dict(self._conn.execute(
            "SELECT docid, id FROM documents WHERE docid IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(bl.docids)),)))
        rows = frozenset(int(r) for r in found.values())
        missing = tuple(sorted(bl.docids - found.keys()))
        if not rows:
            return rows, None, missing
        mask = np.isin(self._chunk_doc, np.fromiter(rows, dtype=np.int32))
        return rows, mask, missing

    @property
    def blocked_matched(self) -> int:
        """How many of the blocklist's docids are documents of this corpus."""
        return len(self._blocked_docs)

    def check_blocklist_complete(self) -> None:
        """Raise BlocklistError unless every blocked docid is a document of this corpus.

        A blocklist written for another docid scheme or another corpus matches nothing and
        hides nothing; the caller refuses it unless the user says the corpus is
        deliberately partial (``--allow-missing-blocked``). A shard holds part of the
        corpus by design: its list is the split's (checked at open), and the split checked
        it against the whole corpus; a broker checks the shards' matched counts add up.
        """
        if self.blocked_missing and self.shard is None:
            listed, missing = len(self.blocklist), self.blocked_missing
            shown = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
            raise BlocklistError(
                f"{listed} blocked docids listed, {listed - len(missing)} in this corpus: {shown} "
                f"(blocklist {self.blocklist.source or '<bytes>'}; --allow-missing-blocked if the "
                "corpus is deliberately partial)")

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Turn what damaged bytes raise while answering into one CorruptIndexError.

        The message names the file (not its directory) and the check that finds the damage.
        """
        try:
            yield
        except _CORRUPTION as e:
            raise self._corrupt(e) from e

    def _corrupt(self, e: Exception) -> CorruptIndexError:
        what = e.message if isinstance(e, IncompatibleIndexError) else f"{e.__class__.__name__}: {e}"
        return CorruptIndexError(f"{self.path.name} is damaged ({what[:200]}); check it with "
                                 "`drsearch validate --deep`")

    # -- search --------------------------------------------------------------------------
    def parse(self, query: str, max_terms: int = MAX_QUERY_TERMS) -> ParsedQuery:
        """``parse_query`` with this index's tokenizer (raises as it does), a query parsed
        before taken from ``_parsed``: the same terms, the same errors."""
        if type(query) is not str or len(query) > _PARSED_QUERY_CHARS or max_terms > MAX_QUERY_TERMS:
            return parse_query(query, self._tokenizer(), max_terms)
        kept = self._parsed
        parsed = kept.get(query)
        if parsed is None:
            parsed = parse_query(query, self._tokenizer(), MAX_QUERY_TERMS)
            if len(kept) >= _PARSED_MAX:  # a new dict, not clear(): another thread reads
                kept = self._parsed = {}
            kept[query] = parsed
        if len(parsed.terms) > max_terms:  # (parse_query's check: more distinct terms than allowed)
            raise too_many_terms(max_terms)
        return parsed

    def _scratch(self) -> Scratch:
        scratch: Scratch | None = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self.scorer.scratch()
        return scratch

    def _postings(self, parsed: ParsedQuery, deadline: float) -> list[Term | None]:
        """Each query term's postings (None if not in the index, or if only blocked chunks
        hold it), in phrase order.

        Sparse lists are views into this thread's arena or into the bytes SQLite returned,
        valid until this thread's next query, or (a kept short list) into read-only bytes of
        their own. Raises IncompatibleIndexError for a list of
        the wrong size or a missing one.
        """
        names = [qt.term for qt in parsed.terms]
        if self._hidden_terms and self.options.hide_blocked_only_terms:
            # A term only blocked chunks hold is looked up under a key the file does not hold:
            # the same lookup, the same miss and the same None as an unknown word's (every term
            # of every query here pays the dict lookup, hidden or not).
            hidden = self._hidden_terms
            names = [hidden.get(name, name) for name in names]
        pages = self._pages
        paged = pages is not None and self.scorer.native
        # The term rows from the file's pages in one C call (no SQL statement, whose every step
        # releases the GIL), and then every list by the page reader; SQLite when that is not
        # built, or when a key's cell spills (a term of ~1,000 bytes). Terms ranked in the pages,
        # short lists' copies and clamped terms' rows are kept (_KEPT_TERMS_BYTES): only the
        # others are looked up.
        from_pages = paged and self._term_rows is not None
        out: list[Term | None]
        if from_pages:
            kept = self._kept_terms
            out, todo = [], []
            for name in names:
                entry = kept.get(name)
                if type(entry) is tuple:  # a clamped term's (row, df): its loaded tfs are the query's
                    out.append(self._dense_term(name, *entry))
                    continue
                if entry is None:
                    todo.append(name)
                out.append(cast("ListTerm | None", entry))
        else:
            out, todo = [None] * len(names), names
        # Reset once per query, whatever the query holds: the dense loader (a clamped term's
        # whole tf array, at rank time) takes from this arena too, so resetting only for long
        # sparse lists let it grow query after query (each 2 bytes per chunk more).
        arena = self._arena()
        arena.reset()
        if todo:
            self._look_up(todo, names, out, paged, from_pages, arena, deadline)
        if time.monotonic() > deadline:
            raise QueryTimeoutError("query ran past its time limit")
        return out

    def _look_up(self, todo: list[str], names: list[str], out: list[Term | None], paged: bool,
                 from_pages: bool, arena: Arena, deadline: float) -> None:
        """``_postings`` of the terms ``todo`` (of ``names``, in order): each found term's
        postings into its place in ``out`` (``paged``: long lists ranked in the pages;
        ``from_pages``: the term rows read from them, and the terms kept)."""
        db = self._db()
        inline = self.options.inline_postings
        pages = self._pages
        c_rows = self._term_rows.find(todo) if from_pages and self._term_rows is not None else None
        coded = self._coded
        if c_rows is not None:
            inline = -1  # no list came with its row
            found = {name: (name, *row[:4], None, *(row[4:] if coded else (RAW_WIDTH, 0)))
                     for name, row in zip(todo, c_rows, strict=True) if row is not None}
        elif len(todo) <= _PLACEHOLDER_TERMS:
            sql = (_TERMS_SQL if coded else _TERMS_SQL_RAW)[len(todo)]
            found = {row[0]: row for row in db.execute(sql, [inline, *todo])}
        else:
            sql = _TERMS_SQL_JSON if coded else _TERMS_SQL_JSON_RAW
            found = {row[0]: row for row in db.execute(sql, (inline, json.dumps(todo)))}
        if time.monotonic() > deadline:
            raise QueryTimeoutError("query ran past its time limit")
        bp = self.block_postings
        long_ids: list[int] = []
        long_bufs: list[Any] = []
        copies: list[tuple[int, str, int, float, Any, int, int]] = []  # kept once read (below)
        filled: list[tuple[int, str, int, float, Any, int, int]] = []  # made once read (below)
        for i, name in enumerate(names):
            row = found.get(name)
            if row is None:
                continue
            _, tid, df, dense, top, data, width, n_table = row
            if dense:
                out[i] = self._dense_term(name, tid, df)
                if from_pages:
                    self._keep(name, (tid, df), _KEPT_ENTRY_BYTES)
                continue
            check_layout(name, df, width, n_table)
            nbytes = list_bytes(df, width, n_table, bp)
            if paged and nbytes > self.options.paged_list_bytes:
                out[i] = self._paged_term(name, tid, df, top, nbytes, width, n_table, keep=from_pages)
                continue
            if df > inline and pages is not None:  # filled below, with the others
                if from_pages and nbytes <= PAGED_LIST_BYTES:  # a copy of its own, then kept
                    buf: Any = np.empty(nbytes, np.uint8)
                    copies.append((i, name, df, top, buf, width, n_table))
                else:  # (made once filled: a coded list's impacts are decoded at once)
                    buf = arena.take(nbytes)
                    filled.append((i, name, df, top, buf, width, n_table))
                long_ids.append(tid)
                long_bufs.append(buf)
                continue
            if df > inline:
                if time.monotonic() > deadline:
                    raise QueryTimeoutError("query ran past its time limit")
                buf = read_blob(db, "postings", "data", tid, nbytes, arena)
            elif type(data) is bytes and len(data) == nbytes:
                buf = data
            else:
                got = "no row" if data is None else f"{len(data)} bytes" if isinstance(data, bytes) \
                    else f"a {type(data).__name__}"
                raise IncompatibleIndexError(f"postings.data row {tid}: {got}, expected {nbytes} bytes")
            out[i] = _sparse(name, df, top, buf, nbytes, width, n_table)
        if long_ids:
            assert pages is not None
            if time.monotonic() > deadline:
                raise QueryTimeoutError("query ran past its time limit")
            pages.read_into(long_ids, long_bufs)
        for i, name, df, top, buf, width, n_table in filled:
            out[i] = _sparse(name, df, top, buf, buf.nbytes, width, n_table, arena)
        for i, name, df, top, buf, width, n_table in copies:
            # Read-only before any view is made: every later query of every thread shares it.
            buf.flags.writeable = False
            term = _sparse(name, df, top, buf, buf.nbytes, width, n_table)
            if width != RAW_WIDTH:  # its impacts decoded once, then kept (and shared) too
                term.impacts.flags.writeable = False
            out[i] = term
            self._keep(name, term, buf.nbytes + 8 * df + _KEPT_COPY_BYTES)

    def _paged_term(self, name: str, tid: int, df: int, top: float, nbytes: int, width: int,
                    n_table: int, keep: bool) -> PagedTerm:
        """Term ``name``'s list (row ``tid``, ``nbytes`` long, codes of ``width`` bytes into a
        table of ``n_table``) ranked where it lies in the file's pages; with ``keep``, kept for
        later queries (_KEPT_TERMS_BYTES). A coded list's table is copied out of the pages
        here, once, into its descriptor (listcodes.descriptor): the kernel reads it there."""
        assert self._pages is not None
        # (pieces: IncompatibleIndexError for a missing row or one of another length)
        file = self._pages.file.pages
        pieces = self._pages.pieces(tid, nbytes)
        if width != RAW_WIDTH:
            pieces = listcodes.descriptor(pieces, width, listcodes.gather(file, pieces, 0, 8 * n_table))
        term = PagedTerm(name, df, top, file, pieces,
                         functools.partial(self._read_paged, name, tid, df, top, nbytes, width, n_table))
        if keep:
            self._keep(name, term, len(term.pieces) + _KEPT_ENTRY_BYTES)
        return term

    def _keep(self, name: str, entry: ListTerm | tuple[int, int], cost: int) -> None:
        """Keep term ``name``'s ``entry`` (costing ``cost`` bytes) for later queries: its
        PagedTerm, a short list's SparseTerm over read-only arrays of its own, or a clamped
        term's (row, df)."""
        with self._lock:  # (dict operations are atomic; the byte count is not)
            self._kept_bytes += cost
            if self._kept_bytes > _KEPT_TERMS_BYTES:
                self._kept_terms = {}
                self._kept_bytes = cost
            self._kept_terms[name] = entry

    def _dense_term(self, name: str, tid: int, df: int) -> DenseTerm:
        """Clamped term ``name`` (row ``tid``) for one query: with the kernel, its tfs are read
        from the pages when rescoring, else picked or loaded (by blob I/O) into the query's
        arena."""
        at = None
        if self._pages is not None and self.scorer.native and self.options.paged_dense:
            at = (self._pages.file.pages, self._dense_pieces(tid))
        return DenseTerm(name, df, self._dense_loader(tid), self._dense_picker(tid), at)

    def _read_paged(self, name: str, tid: int, df: int, top: float, nbytes: int, width: int,
                    n_table: int) -> SparseTerm:
        """A paged list's arrays, for the paths that need them (``PagedTerm.read``): copied
        into this thread's arena, valid until its next query (a coded list's impacts decoded
        there too)."""
        assert self._pages is not None
        arena = self._arena()
        buf = arena.take(nbytes)
        self._pages.read_into([tid], [buf])
        return _sparse(name, df, top, buf, nbytes, width, n_table, arena)

    def _dense_pieces(self, tid: int) -> bytes:
        """Where clamped term ``tid``'s tf array (its dense_tfs BLOB) lies in the file's pages,
        found once and kept (one small table per clamped term: terms in half the chunks or
        more, few in any corpus). The C rescoring checks its length against the chunk count."""
        table = self._dense_tables.get(tid)
        if table is None:
            assert self._dense_tfs is not None
            table = self._dense_tfs.pieces(tid, 2 * (self.scorer.n_rows + 1))
            self._dense_tables[tid] = table
        return table

    def _dense_loader(self, tid: int) -> Callable[[], npt.NDArray[np.uint16]]:
        def load() -> npt.NDArray[np.uint16]:
            nbytes = 2 * (self.scorer.n_rows + 1)
            return read_blob(self._db(), "dense_tfs", "tfs", tid, nbytes, self._arena()).view("<u2")

        return load

    def _dense_picker(self, tid: int) -> Callable[[npt.NDArray[np.int64]], npt.NDArray[np.uint16]]:
        def pick(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint16]:
            blob = self._dense_blob(tid)
            out = np.empty(len(rows), dtype="<u2")
            into = out.data.cast("B")
            for i, row in enumerate(rows.tolist()):
                blob.seek(2 * row)
                blob.readinto(into, 2 * i, 2)
            return out

        return pick

    def _dense_blob(self, tid: int) -> apsw.Blob:
        """This thread's open handle on a clamped-IDF term's tf array, kept across queries.

        SQLite finds a byte of a BLOB by following its chain of overflow pages from the
        first and caches the chain in the open handle: read once to the end at opening, a
        handle reaches any entry directly from then on. One handle per clamped term (few:
        terms in half the chunks or more) and thread; closed with the connection."""
        blobs: dict[int, apsw.Blob] | None = getattr(self._local, "dense_blobs", None)
        if blobs is None:
            blobs = self._local.dense_blobs = {}
        blob = blobs.get(tid)
        if blob is None:
            nbytes = 2 * (self.scorer.n_rows + 1)
            blob = open_blob(self._db(), "dense_tfs", "tfs", tid, nbytes)
            blob.seek(nbytes - 2)
            blob.read(2)  # walks (and caches) the whole chain
            blobs[tid] = blob
        return blob

    def _doc_table(self) -> DocTable:
        """Every document's (docid, url, title), loaded once per engine on first use."""
        table = self._docs
        if table is None:
            db = self._db()  # before the lock: a new thread's first _db() takes it too
            with self._lock:
                if self._docs is None:
                    max_id = db.execute("SELECT coalesce(max(id), 0) FROM documents").get
                    self._docs = DocTable.from_rows(
                        db.execute("SELECT id, docid, url, title FROM documents ORDER BY id"),
                        int(max_id))
                table = self._docs
        return table

    def _arena(self) -> Arena:
        arena = getattr(self._local, "arena", None)
        if arena is None:
            arena = self._local.arena = Arena()
        return arena

    def rank(self, query: str, k: int = 10, *, max_k: int = MAX_K) -> list[tuple[int, float]]:
        """Ranked (best chunk rowid, score) pairs: the core of ``search`` without text.

        ``max_k`` raises the cap on ``k`` (at most MAX_RUN_K) for batch runs."""
        k = check_k(k, min(max_k, MAX_RUN_K))
        deadline = time.monotonic() + self.time_limit_s
        parsed = self.parse(query)
        with self._reading():
            terms = self._postings(parsed, deadline)
            present = [t for t in terms if t is not None]
            if self.options.quantized and len(present) <= QUANT_MAX_LISTS:
                quant = self._quant_lists()
                lists = quant.of(present, self.scorer._as_list)
                return self.scorer.rank_quantized(lists, quant.unit, k, self._blocked_chunks)
            return self.scorer.rank(terms, k, self._blocked_chunks, self._scratch(), deadline)

    def _quant_lists(self) -> QuantLists:
        """The engine's quantised lists (made at the first quantised query: the index's
        largest impact sets the unit)."""
        quant: QuantLists | None = getattr(self, "_quant", None)
        if quant is None:
            top = self._db().execute("SELECT max(max_impact) FROM terms").get
            made = QuantLists(float(top or 1.0))
            with self._lock:  # two threads' first queries: one unit, one cache
                quant = self._quant = getattr(self, "_quant", None) or made
        return quant

    def search(self, query: str, k: int = 10, *, with_text: bool = True, deadline: float | None = None,
               max_terms: int = MAX_QUERY_TERMS, max_k: int = MAX_K) -> SearchResult:
        """The ``k`` best documents for free-text ``query``, each by its best chunk.

        Order: score descending, then lower chunk rowid (= docid, then chunk ordinal; for a
        pre-chunked index, the order its chunks were given in).
        ``deadline`` (``time.monotonic()`` seconds; default now + ``time_limit_s``) bounds
        the whole call: parsing, postings, ranking and snippets. ``max_terms`` caps the
        query's distinct terms (at most ``MAX_QUERY_TERMS``). ``k`` is capped at ``max_k``
        (default MAX_K, the HTTP API's limit; batch runs pass up to MAX_RUN_K).
        Raises InvalidQueryError (empty, oversized, too many terms), InvalidKError,
        QueryTimeoutError, CorruptIndexError. A query with no indexable term returns no hits.
        """
        k = check_k(k, min(max_k, MAX_RUN_K))
        if deadline is None:
            deadline = time.monotonic() + self.time_limit_s
        parsed = self.parse(query, min(max_terms, MAX_QUERY_TERMS))
        if time.monotonic() > deadline:
            raise QueryTimeoutError("query ran past its time limit")
        try:  # what _reading() does, without a context manager's cost on every query
            return self._search(query, k, parsed, with_text, deadline)
        except _CORRUPTION as e:
            raise self._corrupt(e) from e

    def _search(self, query: str, k: int, parsed: ParsedQuery, with_text: bool,
                deadline: float) -> SearchResult:
        terms = self._postings(parsed, deadline)
        options = self.options
        if options.search_in_one_call and (options.texts_with_ranking or not with_text) and \
                self._chunk_texts is not None and self.scorer.native:
            hits = self._search_hits(k, parsed, terms, deadline, with_text)
            if hits is not None:
                return _result(query, k, hits)
        maker = spec = None
        if with_text and self._kernel:
            maker = self._snippets(parsed, terms, deadline)
            if self._chunk_texts is not None and options.texts_with_ranking:
                spec = maker.texts_args(self._chunk_texts, self._hit_buffers())
        # With `spec`, the C ranking reads the chunks' texts and makes their snippets in the
        # same call, without the GIL (made: None where it did not)
        ranked, made = self.scorer.rank_texts(terms, k, self._blocked_chunks, self._scratch(), deadline,
                                              spec)
        if not ranked:
            return SearchResult(query, k, [])
        chunk_ids = [c for c, _ in ranked]
        if self._kernel:  # the hits made in C (make_hits), with their texts
            if time.monotonic() > deadline:
                raise QueryTimeoutError("query ran past its time limit")
            _, _, offsets, fields, pieces = self._hit_buffers()
            texts: tuple[list[str], list[str]] | tuple[()] = ()
            if with_text:
                assert maker is not None
                if made is not None:
                    texts = maker.finish(made)
                elif self._chunk_texts is not None:  # texts and snippets in one call without the GIL
                    texts = maker.of_rows(self._chunk_texts, chunk_ids)
                else:
                    chunk_texts = self._texts(chunk_ids)
                    texts = (chunk_texts, maker.many(chunk_texts))
            return SearchResult(query, k, kernel.make_hits(
                Hit, chunk_ids, [s for _, s in ranked], self._chunk_doc, self._chunk_ordinal,
                offsets, fields, pieces, *texts))
        rows = np.array(chunk_ids, dtype=np.intp)
        docs = self._doc_table().get(self._chunk_doc[rows].tolist())
        ordinals = self._chunk_ordinal[rows].tolist()
        if not with_text:  # nothing slow per hit: one deadline check for them all
            if time.monotonic() > deadline:
                raise QueryTimeoutError("query ran past its time limit")
            return SearchResult(query, k, [
                Hit(rank, docid, url, title, score, ordinal, "", "")
                for rank, ((_, score), (docid, url, title), ordinal) in enumerate(
                    zip(ranked, docs, ordinals, strict=True), 1)])
        chunk_texts = self._texts(chunk_ids)
        return SearchResult(query, k, [
            Hit(rank, docid, url, title, score, ordinal, chunk_text, snippet)
            for rank, ((_, score), (docid, url, title), ordinal, chunk_text, snippet) in enumerate(
                zip(ranked, docs, ordinals, chunk_texts,
                    self._snippets(parsed, terms, deadline).many(chunk_texts), strict=True), 1)])

    def _search_hits(self, k: int, parsed: ParsedQuery, terms: list[Term | None],
                     deadline: float, with_text: bool = True) -> list[Hit] | None:
        """The hits of a complete search made in one kernel call (``_kernels.search_hits``:
        the ranking, the texts and snippets, the hits; beside clamped terms, with the exact
        rescoring), or None where the other path ranks: clamped terms only or whose tfs are
        not in the pages, candidates that do not settle the top k, texts the kernel could not
        read (that path reports it). ``with_text`` False (a ranked search): the hits without
        texts. One short list is ranked in the same call by the one-term pass, where its list
        lies (no copy). Raises QueryTimeoutError, ValueError (a damaged list:
        CorruptIndexError to the caller)."""
        present = [t for t in terms if t is not None]
        if not present:
            return []
        lists = present
        rescore: tuple[tuple[Any, ...], float] | tuple[()] = ()
        if DenseTerm in map(type, present):  # beside clamped terms: Scorer._rank_native's way
            lists = [t for t in present if type(t) is not DenseTerm]
            got_args = self.scorer.rescore_args(present, len(lists)) if lists else None
            if got_args is None:
                return None
            rescore = got_args
        pairs = self._stem_pairs(parsed, terms) if with_text else None
        context = self._search_context()  # (a thread's first: its scratch, the hits' buffers)
        budget = deadline - time.monotonic()
        if budget <= 0.0:
            raise QueryTimeoutError("query ran past its time limit")
        got = kernel.search_hits(context, lists, pairs, k, budget, deadline, rescore,
                                 self.scorer.single_term_postings)
        if type(got) is list:
            return got
        if got is None:
            raise QueryTimeoutError("query ran past its time limit")
        if got is False or got is NotImplemented:
            return None
        # snippets the kernel left to the Python code (None in their hit)
        hits, texts = cast("tuple[list[Hit], list[str]]", got)
        assert pairs is not None  # (without texts the kernel leaves none)
        maker = SnippetMaker.of_stems(pairs, deadline=deadline)
        return [h if h.snippet is not None else h._replace(snippet=maker(text))
                for h, text in zip(hits, texts, strict=True)]

    def _search_context(self) -> tuple[Any, ...]:
        """This thread's ``_kernels.search_hits`` context: what its calls take that does not
        change between queries (the scorer's arrays and this thread's scratch, the file and
        its chunk text column, the hits' buffers)."""
        got: tuple[Any, ...] | None = getattr(self._local, "search_context", None)
        if got is None:
            assert self._chunk_texts is not None
            head, rule = self.scorer.kernel_context(self._blocked_chunks, self._scratch())
            geometry = self._chunk_texts.text_geometry()
            got = self._local.search_context = kernel.search_context(
                head, geometry[0], rule, geometry[1:], SNIPPET_CHARS, self._hit_buffers(), Hit,
                IDF_FLOOR, PagedTerm, SparseTerm)
        return got

    def _hit_buffers(self) -> tuple[Any, ...]:
        """What ``make_hits`` reads of a hit (chunk_doc, chunk_ordinal, and the document
        fields as ``DocTable.fields`` holds them): the ranking's kernel call reads them after
        it has ranked, without the GIL, so that make_hits finds them in the cache."""
        got: tuple[Any, ...] | None = self._hit_buffers_made
        if got is None:
            got = self._hit_buffers_made = (self._chunk_doc, self._chunk_ordinal,
                                            *self._doc_table().fields())
        return got

    def _snippets(self, parsed: ParsedQuery, terms: list[Term | None], deadline: float) -> SnippetMaker:
        """The query's SnippetMaker (of :meth:`_stem_pairs`)."""
        return SnippetMaker.of_stems(self._stem_pairs(parsed, terms), deadline=deadline)

    def _stem_pairs(self, parsed: ParsedQuery, terms: list[Term | None]) -> list[tuple[str, float]]:
        """Each present term's snippet (stem, weight), from ``_snippet_stems`` where a query
        had the term (same spelling) before."""
        kept = self._snippet_stems
        if self.shard is not None:
            return self._corpus_stem_pairs(parsed)
        stems = []
        for qt, t in zip(parsed.terms, terms, strict=True):
            if t is None:
                continue
            got = kept.get(qt)
            if got is None:
                got = (stem_of(qt.term, qt.surface), bm25_idf(self.scorer.n_rows, t.df))
                if len(kept) >= _SNIPPET_STEMS_MAX:  # a new dict, not clear(): another thread reads
                    kept = self._snippet_stems = {}
                kept[qt] = got
            stems.append(got)
        return stems

    def _corpus_stem_pairs(self, parsed: ParsedQuery) -> list[tuple[str, float]]:
        """A shard's :meth:`_stem_pairs`: the terms the whole corpus holds (where visible
        to a query), weighed by the corpus' df and N (``shard_terms``), so a shard cuts the
        snippets the whole index cuts, whichever of the query's terms it holds itself."""
        kept = self._snippet_stems
        todo = [qt for qt in parsed.terms if qt not in kept]
        if todo:
            assert self.shard is not None
            n_rows = int(self.shard["chunks"])
            hide = self.options.hide_blocked_only_terms
            found = {term: (int(df), bool(hidden)) for term, df, hidden in self._db().execute(
                "SELECT term, df, hidden FROM shard_terms WHERE term IN (SELECT value FROM json_each(?))",
                (json.dumps([qt.term for qt in todo]),))}
            if len(kept) + len(todo) >= _SNIPPET_STEMS_MAX:
                kept = self._snippet_stems = {}
            for qt in todo:
                df, hidden = found.get(qt.term, (0, True))
                # absent (or blocked-only) in the corpus: no stem, as a None term has none
                kept[qt] = ("", 0.0) if df == 0 or (hidden and hide) else (
                    stem_of(qt.term, qt.surface), bm25_idf(n_rows, df))
        return [got for qt in parsed.terms if (got := kept[qt])[0] or got[1]]

    def hidden_terms(self) -> frozenset[str]:
        """The terms that only blocked chunks hold (a query treats them as absent)."""
        return frozenset(self._hidden_terms)

    def _texts(self, chunk_ids: list[int]) -> list[str]:
        """The chunks' texts, in order. Raises IncompatibleIndexError for a missing chunk row."""
        if self._chunk_texts is not None:  # from the pages, in one C call
            return self._chunk_texts.read_texts(chunk_ids)
        try:
            texts: dict[int, str] = dict(self._db().execute(
                f"SELECT id, text FROM {self._text_source} WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(chunk_ids),)))
        except ValueError as e:  # chunktext.chunk_text: a span or document text that is damaged
            raise IncompatibleIndexError(f"chunk text unreadable ({e})") from e
        missing = [c for c in chunk_ids if c not in texts]
        if missing:
            raise IncompatibleIndexError(f"chunks row {missing[0]}: no such row")
        return [texts[c] for c in chunk_ids]

    def fts5_rank(self, query: str, limit: int = 1000) -> list[tuple[int, float]]:
        """FTS5's own ``bm25()`` ranking of the same parsed query: the correctness oracle.

        Returns (chunk rowid, -bm25) for the best ``limit`` chunks, blocked chunks included.
        Slow (no top-k pruning in FTS5); for tests and benchmarks.
        """
        match = self.parse(query).fts5_match()
        if not match:
            return []
        return [(r, -s) for r, s in self._db().execute(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY rank LIMIT ?", (match, limit))]

    # -- chunks, for rankers built over this engine (drsearch.dense) -------------------
    @property
    def chunk_documents(self) -> npt.NDArray[np.int32]:
        """Each chunk's document rowid, indexed by chunk rowid (1..chunks; entry 0 unused)."""
        return self._chunk_doc

    @property
    def blocked_chunks(self) -> npt.NDArray[np.bool_] | None:
        """True at the chunk rowids of blocked documents (None: nothing of the corpus blocked)."""
        return self._blocked_chunks

    def chunk_texts(self, rows: list[int]) -> list[str]:
        """The texts of chunks ``rows`` (rowids), in order; CorruptIndexError on damage."""
        with self._reading():
            return self._texts(rows)

    def hits(self, query: str, ranked: list[tuple[int, float]], *, with_text: bool = True,
             deadline: float | None = None) -> list[Hit]:
        """The hits of chunks another ranker chose, as ``search`` makes them: ``ranked`` is
        (chunk rowid, score) best first, one chunk per document, none blocked (the caller's
        guarantee). Snippets mark the query's terms as BM25's do. Raises InvalidQueryError,
        QueryTimeoutError, CorruptIndexError."""
        if deadline is None:
            deadline = time.monotonic() + self.time_limit_s
        parsed = self.parse(query)
        if not ranked:
            return []
        with self._reading():
            rows = np.array([c for c, _ in ranked], dtype=np.intp)
            docs = self._doc_table().get(self._chunk_doc[rows].tolist())
            ordinals = self._chunk_ordinal[rows].tolist()
            if with_text:
                chunk_texts = self._texts(rows.tolist())
                terms = self._postings(parsed, deadline)
                snippets = self._snippets(parsed, terms, deadline).many(chunk_texts)
            else:
                chunk_texts = snippets = [""] * len(ranked)
        if time.monotonic() > deadline:
            raise QueryTimeoutError("query ran past its time limit")
        return [Hit(rank, docid, url, title, score, ordinal, text, snippet)
                for rank, ((_, score), (docid, url, title), ordinal, text, snippet) in enumerate(
                    zip(ranked, docs, ordinals, chunk_texts, snippets, strict=True), 1)]

    # -- open ----------------------------------------------------------------------------
    def open_document(self, *, docid: str | None = None, url: str | None = None) -> Document:
        """A document by docid or URL (any spelling with the same canonical form).

        Raises InvalidRequestError unless exactly one of docid/url is given, and
        DocumentNotFoundError for unknown and blocked documents alike.
        """
        if (docid is None) == (url is None):
            raise InvalidRequestError("give exactly one of docid or url")
        if docid is not None:
            if not isinstance(docid, str):
                raise InvalidRequestError("docid must be a string")
            sql, key, missing = _ID_BY_DOCID, docid, f"no document with docid {docid!r}"
        else:
            if not isinstance(url, str):
                raise InvalidRequestError("url must be a string")
            sql, key, missing = _ID_BY_URL, canonicalize_url(url), f"no document with url {url!r}"
        with self._reading():
            db = self._db()
            # Unknown and blocked documents take one path: the rowid lookup (an index probe
            # whether or not it hits), one set lookup, the same exception. Nothing of a
            # blocked document is read.
            row_id = db.execute(sql, (key,)).get
            if row_id in self._hidden:
                raise DocumentNotFoundError(missing)
            row = db.execute(f"SELECT {_DOC_COLUMNS} WHERE d.id = ?", (row_id,)).fetchone()
            if row is None:
                raise CorruptIndexError(f"{self.path.name} is damaged (document row {row_id} has no "
                                        "text); check it with `drsearch validate --deep`")
            _, did, durl, canon, title, text, metadata, n_words, n_chunks = row
            return Document(did, durl, canon, title, chunktext.unpack_text(text),
                            json.loads(metadata), n_words, n_chunks)

    # -- stats ---------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counts, build parameters, identity and the blocklist's size and hash."""
        m = self.meta
        # a pre-chunked index says so (its chunk_words/stride/overlap are null); others unchanged
        chunking = {"chunking": m["chunking"]} if "chunking" in m else {}
        return {
            "documents": m["documents"],
            "indexed_documents": m["indexed_documents"],
            "empty_documents": m["empty_documents"],
            "chunks": m["chunks"],
            "tokens": m["tokens"],
            "vocabulary": m["vocabulary"],
            "postings": m["postings"],
            "dense_terms": m["dense_terms"],
            "blocked_documents": len(self._blocked_docs),
            "blocklist": {"sha256": self.blocklist.sha256, "count": len(self.blocklist),
                          "matched": len(self._blocked_docs)},
            "content_identity": m["content_identity"],
            "schema_version": m["schema_version"],
            "scorer": self.scorer.kind,
            "build": {
                "tokenizer": m["tokenizer"],
                "chunk_words": m["chunk_words"],
                "chunk_stride": m["chunk_stride"],
                "chunk_overlap": m["chunk_overlap"],
                **chunking,
                "bm25": m["bm25"],
                "build_tool": m["build_tool"],
                "sqlite_version": m["sqlite_version"],
            },
            "file": {"path": str(self.path), "bytes": self.path.stat().st_size},
            **({} if self.shard is None else {"shard": self.shard}),
        }


def _read_meta(conn: apsw.Connection) -> dict[str, Any]:
    """The ``meta`` table decoded, with the types of the values the engine reads checked.

    Raises IncompatibleIndexError naming the first bad key (a crafted or damaged file).
    """
    meta: dict[str, Any] = {}
    for key, value in conn.execute("SELECT key, value FROM meta"):
        if not isinstance(key, str) or not isinstance(value, str):
            raise IncompatibleIndexError(f"damaged meta table (key {key!r} is not text)")
        try:
            meta[key] = json.loads(value)
        except ValueError:
            raise IncompatibleIndexError(f"damaged meta value {key!r} (not JSON)") from None
    for key, kind in _META_TYPES.items():
        if key not in meta:
            raise IncompatibleIndexError(f"damaged or incomplete drsearch index (meta has no {key!r})")
        value = meta[key]
        if value is None and key in _PRECHUNKED_NULL and meta.get("chunking") == "pre-chunked":
            continue  # the source's own chunks: no window size to record
        if isinstance(value, bool) or not isinstance(value, kind):
            wanted = "an integer" if kind is int else "a " + getattr(kind, "__name__", "value")
            raise IncompatibleIndexError(f"damaged meta value {key!r}: {str(value)[:60]!r} is not {wanted}")
        if isinstance(value, int) and value < 0:
            raise IncompatibleIndexError(f"damaged meta value {key!r}: {value} is negative")
    for param in ("k1", "b"):
        value = meta["bm25"].get(param)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e6:
            raise IncompatibleIndexError(f"damaged meta value 'bm25': {param} = {str(value)[:60]!r}")
    return meta


_SHARD_INTS = ("index", "count", "documents", "chunks", "tokens", "vocabulary", "first_document",
               "first_chunk")


def _read_shard(conn: apsw.Connection, meta: dict[str, Any]) -> dict[str, Any] | None:
    """``meta.shard`` of a shard file (schema version 3), checked; None for a whole index.
    Raises IncompatibleIndexError for a malformed one, or one of a version 3 file without it."""
    version = conn.execute("PRAGMA user_version").get
    shard = meta.get("shard")
    if shard is None and version != SHARD_SCHEMA_VERSION:
        return None
    ok = (isinstance(shard, dict) and version in SHARD_VERSIONS and shard.get("format") == 1
          and all(type(shard.get(k)) is int and shard[k] >= 0 for k in _SHARD_INTS)
          and isinstance(shard.get("set"), str) and isinstance(shard.get("corpus"), str)
          and isinstance(shard.get("blocklist"), dict) and isinstance(shard["blocklist"].get("sha256"), str)
          and shard["index"] < shard["count"])
    if not ok:
        raise IncompatibleIndexError(f"damaged meta value 'shard' (schema version {version}): "
                                     f"{json.dumps(shard)[:80]}")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")}
    if "shard_terms" not in tables:
        raise IncompatibleIndexError("damaged or incomplete shard (missing tables: shard_terms)")
    return cast("dict[str, Any]", shard)


def _corpus_avgdl(shard: dict[str, Any]) -> float:
    """The whole corpus' avgdl, as mean_chunk_len computes it over the corpus' chunk lengths."""
    n = int(shard["chunks"])
    return float(int(shard["tokens"])) / float(n) if n else 1.0


def _block_postings(conn: apsw.Connection, meta: dict[str, Any]) -> int | None:
    """Postings per stored block maximum (schema version 2), or None (version 1: none stored).

    Raises IncompatibleIndexError when a version-2 file's ``meta`` lacks a valid value."""
    if conn.execute("PRAGMA user_version").get < 2:
        return None
    value = meta.get("block_postings")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1 << 20:
        raise IncompatibleIndexError(f"damaged meta value 'block_postings': {str(value)[:60]!r}")
    return value


def _read_arrays(conn: apsw.Connection, meta: dict[str, Any], unread: tuple[str, ...] = ()) -> tuple[
        dict[str, tuple[str, bytes | None, int, int]], dict[str, npt.NDArray[Any]]]:
    """The per-chunk arrays, each checked for its dtype, size and (chunk_doc) range, as
    {name: (dtype, bytes, rowid, length)} and numpy views of them. The arrays named in
    ``unread`` are checked but not read (bytes None, no view): the caller reads them from the
    file's pages (SQLite's length() of a BLOB column does not read its overflow pages).

    Raises IncompatibleIndexError naming the first bad array.
    """
    raw: dict[str, tuple[str, bytes | None, int, int]] = {}
    for name, dtype, is_blob, nbytes, rowid, data in conn.execute(
            "SELECT name, dtype, typeof(data) = 'blob', length(data), rowid, CASE WHEN name IN "
            "(SELECT value FROM json_each(?)) THEN NULL ELSE data END FROM arrays",
            (json.dumps(list(unread)),)):
        if name not in _ARRAY_DTYPES:
            continue
        if dtype != _ARRAY_DTYPES[name] or not is_blob:
            raise IncompatibleIndexError(f"damaged array {name!r} (dtype {str(dtype)[:20]!r}, "
                                         f"expected {_ARRAY_DTYPES[name]!r})")
        if nbytes % np.dtype(dtype).itemsize:
            raise IncompatibleIndexError(f"damaged array {name!r} ({nbytes} bytes)")
        raw[name] = (dtype, data, rowid, nbytes)
    missing = sorted(set(_ARRAY_DTYPES) - _OPTIONAL_ARRAYS - set(raw))
    if missing:
        raise IncompatibleIndexError(f"damaged or incomplete drsearch index (no array {missing[0]!r})")
    arrays = {n: np.frombuffer(d, dtype=t) for n, (t, d, _, _) in raw.items() if d is not None}
    rows = int(meta["chunks"]) + 1  # index 0 unused: chunk rowids start at 1
    for name in ("chunk_doc", "chunk_len", "chunk_ordinal"):
        if len(arrays[name]) != rows:
            raise IncompatibleIndexError(f"damaged array {name!r} ({len(arrays[name])} entries for "
                                         f"{meta['chunks']} chunks)")
        if rows and int(arrays[name].min()) < 0:
            raise IncompatibleIndexError(f"damaged array {name!r} (negative entries)")
    if rows > 1 and int(arrays["chunk_doc"].max()) > int(meta["documents"]):
        raise IncompatibleIndexError("damaged array 'chunk_doc' (a chunk of a document past the last)")
    return raw, arrays


__all__ = ["DEFAULT_OPTIONS", "Engine", "EngineOptions"]
