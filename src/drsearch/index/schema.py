"""The on-disk layout of a drsearch index: one SQLite file, versioned by PRAGMAs.

Tables (all written once, in one transaction, by :mod:`drsearch.index.build`):

``meta(key, value)``
    build parameters, counts, versions and the content identity (JSON values).
``documents`` and ``doc_texts``
    one row per input document, rowids 1..D in sorted docid order; ``metadata`` is a
    sorted-key JSON object. The zlib-compressed UTF-8 full text (NFC-normalised) lives in
    ``doc_texts`` under the same rowid, so the rows search reads (docid, url, title) stay
    small and densely packed.
``urls(canonical_url, doc)``
    every canonical URL (a document's own and its aliases) → document rowid.
``chunks``
    800-word windows, rowids 1..N in (document rowid, ordinal) order, so lower rowid
    means lower docid then lower ordinal: FTS5's tie-break is also ours. A pre-chunked
    build (``meta`` ``chunking: "pre-chunked"``) keeps its input's chunk order instead,
    with documents in the order of their first chunk, and ``start_word``/``end_word`` -1.
``chunks_fts``
    the FTS5 index of record over ``chunks.text`` (external content, ``detail=full``).
``terms(term, id, df, dense, max_impact)``, ``postings(id, data)`` and ``dense_tfs(id, tfs)``
    the fast scorer's inverted index, derived from FTS5's own tokenizer. For a term in fewer
    than half of the chunks, ``data`` holds each chunk's BM25 impact for that term (``df``
    float64s, bit-identical to FTS5's ``bm25()`` for the term alone) followed by the chunk
    rowids (``df`` uint32s, ascending): one BLOB read per term. A term in
    at least half of the chunks (IDF clamped to 1e-6: ``dense = 1``) is stored instead as a
    dense uint16 term-frequency array over all chunk rowids: it only breaks near-ties.
``arrays(name, dtype, data)``
    dense per-chunk arrays: ``chunk_doc`` (document rowid), ``chunk_len`` (tokens),
    ``chunk_ordinal`` (the chunk's position in its document); and every document's
    (docid, url, title) as one UTF-8 buffer ``doc_fields`` with ``doc_field_offsets``
    (int64: field f of rowid d spans offsets[3d+f] .. offsets[3d+f+1]; see doctable.py).
    Files built before these two existed are read from ``documents`` instead.
"""

from __future__ import annotations

APPLICATION_ID = 0x44525331  # "DRS1"
SCHEMA_VERSION = 1
DOC_TEXT_CODEC = "zlib"

DDL = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE documents(
    id INTEGER PRIMARY KEY,
    docid TEXT NOT NULL UNIQUE,
    url TEXT NOT NULL,
    canonical_url TEXT NOT NULL,
    title TEXT NOT NULL,
    metadata TEXT NOT NULL,
    n_words INTEGER NOT NULL,
    n_chunks INTEGER NOT NULL
);
CREATE TABLE doc_texts(id INTEGER PRIMARY KEY, text BLOB NOT NULL);
CREATE TABLE urls(canonical_url TEXT PRIMARY KEY, doc INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE chunks(
    id INTEGER PRIMARY KEY,
    doc INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    start_word INTEGER NOT NULL,
    end_word INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE TABLE terms(
    term TEXT PRIMARY KEY, id INTEGER NOT NULL, df INTEGER NOT NULL, dense INTEGER NOT NULL,
    max_impact REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE postings(id INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE dense_tfs(id INTEGER PRIMARY KEY, tfs BLOB NOT NULL);
CREATE TABLE arrays(name TEXT PRIMARY KEY, dtype TEXT NOT NULL, data BLOB NOT NULL);
"""

FTS_DDL = (
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id', "
    "tokenize={tokenize}, detail=full)"
)

REQUIRED_TABLES = (
    "meta", "documents", "doc_texts", "urls", "chunks", "chunks_fts", "terms", "postings", "dense_tfs",
    "arrays",
)

__all__ = ["APPLICATION_ID", "DDL", "DOC_TEXT_CODEC", "FTS_DDL", "REQUIRED_TABLES", "SCHEMA_VERSION"]
