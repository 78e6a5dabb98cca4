"""The search engine over one frozen index file.

``Engine.open(path, blocklist)`` opens the file read-only and immutable, checks its
application id and schema version, and loads the small per-chunk arrays. ``search``
ranks documents by their best chunk exactly as FTS5's ``bm25()`` would, but from
precomputed posting lists (see :mod:`drsearch.index.scoring`); ``open`` returns a
document by docid or by any spelling of any of its URLs. Blocked documents do not exist
for either. The engine never writes to the file.
"""

from __future__ import annotations

import json
import os
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import apsw
import numpy as np
import numpy.typing as npt

from .blobs import Arena, read_blob
from .blocklist import BlockList
from .doctable import DocTable
from .errors import (
    BlocklistError,
    DocumentNotFoundError,
    IncompatibleIndexError,
    InvalidKError,
    InvalidRequestError,
    NotADatabaseError,
    QueryTimeoutError,
)
from .models import Document, Hit, SearchResult
from .query import ParsedQuery, parse_query
from .schema import APPLICATION_ID, REQUIRED_TABLES, SCHEMA_VERSION
from .scoring import DenseTerm, Scorer, Scratch, SparseTerm, Term, bm25_idf
from .snippet import SnippetMaker
from .text import Tokenizer
from .urls import canonicalize_url

MAX_K = 100
# Deepest ``k`` for batch retrieval (TREC runs are cut at 1000 by convention); the per-request
# limit of the HTTP API and the agents stays MAX_K. Output buffers hold every chunk, so any k fits.
MAX_RUN_K = 10_000
DEFAULT_TIME_LIMIT_S = 10.0
_MMAP_BYTES = 1 << 40  # SQLite caps this at its compile-time maximum

_TERMS_SQL = (
    "SELECT term, id, df, dense, max_impact FROM terms WHERE term IN (SELECT value FROM json_each(?))"
)
_DOC_COLUMNS = ("d.id, d.docid, d.url, d.canonical_url, d.title, t.text, d.metadata, d.n_words, "
                "d.n_chunks FROM documents AS d JOIN doc_texts AS t ON t.id = d.id")


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
    if version != SCHEMA_VERSION:
        conn.close()
        raise IncompatibleIndexError(
            f"{path}: index schema version {version}, this drsearch reads version {SCHEMA_VERSION}"
        )
    return conn


class Engine:
    """Read-only search over a frozen drsearch index. Thread-safe for concurrent searches."""

    def __init__(self, conn: apsw.Connection, path: Path, blocklist: BlockList,
                 time_limit_s: float, native: bool | None = None) -> None:
        self.path = path
        self.blocklist = blocklist
        self.time_limit_s = time_limit_s
        self._conn = conn  # the opening thread's connection; other threads get their own
        self._owner = threading.get_ident()
        self._extra_conns: list[apsw.Connection] = []
        self._lock = threading.Lock()
        self.meta: dict[str, Any] = {
            k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")
        }
        self.tokenizer = Tokenizer(conn, self.meta["tokenizer"])
        raw = {n: (t, d) for n, t, d in conn.execute("SELECT name, dtype, data FROM arrays")}
        arrays = {n: np.frombuffer(d, dtype=t) for n, (t, d) in raw.items()}
        self._chunk_doc: npt.NDArray[np.int32] = arrays["chunk_doc"]
        self._chunk_ordinal: npt.NDArray[np.int32] = arrays["chunk_ordinal"]
        self.scorer = Scorer(self._chunk_doc, arrays["chunk_len"],
                             self.meta["bm25"]["k1"], self.meta["bm25"]["b"], native=native)
        self._blocked_docs, self._blocked_chunks, self.blocked_missing = self._resolve_blocklist(blocklist)
        self._local = threading.local()
        self._docs: DocTable | None = None
        if "doc_fields" in raw and "doc_field_offsets" in arrays:
            self._docs = DocTable(raw["doc_fields"][1], arrays["doc_field_offsets"].astype(np.int64))

    @classmethod
    def open(cls, path: str | os.PathLike[str], blocklist: BlockList | None = None, *,
             time_limit_s: float = DEFAULT_TIME_LIMIT_S, native: bool | None = None) -> Engine:
        """Open a frozen index. Raises NotADatabaseError / IncompatibleIndexError.

        ``native``: rank with the C loops (None: when built, the default; False: numpy only).
        """
        p = Path(path)
        conn = _connect(p)
        try:
            return cls(conn, p, blocklist or BlockList.empty(), time_limit_s, native)
        except (apsw.Error, KeyError, ValueError) as e:
            conn.close()
            raise IncompatibleIndexError(f"{p}: damaged or incomplete drsearch index ({e})") from e

    def close(self) -> None:
        with self._lock:
            for conn in self._extra_conns:
                conn.close()
            self._extra_conns.clear()
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
        deliberately partial (``--allow-missing-blocked``).
        """
        if self.blocked_missing:
            listed, missing = len(self.blocklist), self.blocked_missing
            shown = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
            raise BlocklistError(
                f"{listed} blocked docids listed, {listed - len(missing)} in this corpus: {shown} "
                f"(blocklist {self.blocklist.source or '<bytes>'}; --allow-missing-blocked if the "
                "corpus is deliberately partial)")

    # -- search --------------------------------------------------------------------------
    def parse(self, query: str) -> ParsedQuery:
        return parse_query(query, self._tokenizer())

    def _scratch(self) -> Scratch:
        scratch: Scratch | None = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self.scorer.scratch()
        return scratch

    def _postings(self, parsed: ParsedQuery, deadline: float) -> list[Term | None]:
        """Each query term's postings (None if not in the index), in phrase order.

        Sparse lists are views into this thread's arena: valid until its next query.
        """
        db = self._db()
        found = {term: (tid, df, dense, top) for term, tid, df, dense, top in db.execute(
            _TERMS_SQL, (json.dumps([t.term for t in parsed.terms]),))}
        arena = self._arena()
        arena.reset()
        out: list[Term | None] = []
        for qt in parsed.terms:
            if time.monotonic() > deadline:
                raise QueryTimeoutError("query ran past its time limit")
            if qt.term not in found:
                out.append(None)
                continue
            tid, df, dense, top = found[qt.term]
            if dense:
                out.append(DenseTerm(qt.term, df, self._dense_loader(tid)))
                continue
            data = read_blob(db, "postings", "data", tid, 12 * df, arena)
            out.append(SparseTerm(qt.term, df, data[8 * df :].view("<u4"), data[: 8 * df].view("<f8"),
                                  top))
        return out

    def _dense_loader(self, tid: int) -> Callable[[], npt.NDArray[np.uint16]]:
        def load() -> npt.NDArray[np.uint16]:
            nbytes = 2 * (self.scorer.n_rows + 1)
            return read_blob(self._db(), "dense_tfs", "tfs", tid, nbytes, self._arena()).view("<u2")

        return load

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
        parsed = self.parse(query)
        deadline = time.monotonic() + self.time_limit_s
        terms = self._postings(parsed, deadline)
        return self.scorer.rank(terms, k, self._blocked_chunks, self._scratch(), deadline)

    def search(self, query: str, k: int = 10, *, with_text: bool = True,
               max_k: int = MAX_K) -> SearchResult:
        """The ``k`` best documents for free-text ``query``, each by its best chunk.

        Order: score descending, then lower chunk rowid (= docid, then chunk ordinal).
        Raises InvalidQueryError (empty/oversized), InvalidKError, QueryTimeoutError.
        A query with no indexable term returns no hits. ``k`` is capped at ``max_k``
        (default MAX_K, the HTTP API's limit; batch runs pass up to MAX_RUN_K).
        """
        k = check_k(k, min(max_k, MAX_RUN_K))
        parsed = self.parse(query)
        deadline = time.monotonic() + self.time_limit_s
        terms = self._postings(parsed, deadline)
        ranked = self.scorer.rank(terms, k, self._blocked_chunks, self._scratch(), deadline)
        if not ranked:
            return SearchResult(query, k, [])
        db = self._db()
        chunk_ids = [c for c, _ in ranked]
        doc_ids = self._chunk_doc[chunk_ids].tolist()
        docs = self._doc_table().get(doc_ids)
        texts: dict[int, str] = {}
        if with_text:
            texts = dict(db.execute(
                "SELECT id, text FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps(chunk_ids),)))
        snippets = SnippetMaker(
            (qt.term, qt.surface, bm25_idf(self.scorer.n_rows, t.df))
            for qt, t in zip(parsed.terms, terms, strict=True) if t is not None
        ) if with_text else None
        ordinals = self._chunk_ordinal[chunk_ids].tolist()
        hits = []
        for rank, ((cid, score), (docid, url, title), ordinal) in enumerate(
                zip(ranked, docs, ordinals, strict=True), 1):
            chunk_text = texts.get(cid, "")
            snippet = snippets(chunk_text) if snippets is not None else ""
            hits.append(Hit(rank, docid, url, title, score, ordinal, chunk_text, snippet))
        return SearchResult(query, k, hits)

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
            row = self._db().execute(
                f"SELECT {_DOC_COLUMNS} WHERE d.docid = ?", (docid,)).fetchone()
            missing = f"no document with docid {docid!r}"
        else:
            if not isinstance(url, str):
                raise InvalidRequestError("url must be a string")
            row = self._db().execute(
                f"SELECT {_DOC_COLUMNS} WHERE d.id = "
                "(SELECT doc FROM urls WHERE canonical_url = ?)", (canonicalize_url(url),)
            ).fetchone()
            missing = f"no document with url {url!r}"
        if row is None or row[0] in self._blocked_docs:
            raise DocumentNotFoundError(missing)
        _, did, durl, canon, title, text, metadata, n_words, n_chunks = row
        return Document(did, durl, canon, title, zlib.decompress(text).decode("utf-8"),
                        json.loads(metadata), n_words, n_chunks)

    # -- stats ---------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counts, build parameters, identity and the blocklist's size and hash."""
        m = self.meta
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
                "bm25": m["bm25"],
                "build_tool": m["build_tool"],
                "sqlite_version": m["sqlite_version"],
            },
            "file": {"path": str(self.path), "bytes": self.path.stat().st_size},
        }


def check_k(k: object, max_k: int = MAX_K) -> int:
    """Validate k: an int in 1..max_k. Raises InvalidKError."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidKError(f"k must be an integer between 1 and {max_k}")
    if not 1 <= k <= max_k:
        raise InvalidKError(f"k must be between 1 and {max_k}, got {k}")
    return k


__all__ = ["MAX_K", "MAX_RUN_K", "Engine", "check_k"]
