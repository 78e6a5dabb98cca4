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
    Since schema version 4 a chunk cut from its document stores no text: ``start_byte`` and
    ``end_byte`` are the UTF-8 byte span of its words in the document's stored text
    (``doc_texts``: its words joined by single spaces, in drlz), ``zstart`` the offset in that
    BLOB of the block that starts at ``start_byte``, and ``text`` is NULL
    (:mod:`drsearch.index.chunktext`); a pre-chunked
    chunk keeps its ``text``, with offsets -1. Versions 1-3 store every chunk's ``text``.
``chunk_texts`` (a view, schema version 4)
    ``(id, text)`` of every chunk, the text made by the SQL function ``drsearch_chunk_text``
    (:func:`drsearch.index.chunktext.register`) from the span and the document text.
``chunks_fts``
    the FTS5 index of record over the chunks' text (external content, ``detail=full``): the
    ``chunk_texts`` view since version 4, ``chunks.text`` before. ``bm25()`` reads only
    FTS5's own tables, so it ranks on any connection; reading the text through FTS5
    (``integrity-check``, ``highlight()``, ``rebuild``) needs the function.
``terms(term, id, df, dense, max_impact, width, n_table)``, ``postings(id, data)`` and ``dense_tfs(id, tfs)``
    the fast scorer's inverted index, derived from FTS5's own tokenizer. For a term in fewer
    than half of the chunks, ``data`` holds each chunk's BM25 impact for that term (``df``
    float64s, bit-identical to FTS5's ``bm25()`` for the term alone) followed by the chunk
    rowids (``df`` uint32s, ascending): one BLOB read per term. A term in
    at least half of the chunks (IDF clamped to 1e-6: ``dense = 1``) is stored instead as a
    dense uint16 term-frequency array over all chunk rowids: it only breaks near-ties.
    ``max_impact`` is the list's largest impact (MaxScore's per-term bound). Since schema
    version 2, a list of more than ``BLOCK_POSTINGS`` (64) postings is followed in ``data``
    by its *block maxima*: ``ceil(df / 64)`` float64s, the largest impact of each run of 64
    consecutive postings (the last run may be shorter), the per-block bounds of block-max
    pruning (:func:`block_count`; ``meta.block_postings`` records the 64). A version-1 file
    has no block maxima; it is read and ranked exactly, with the per-term bounds only.
    Since schema version 5 a list may store its impacts as codes into a table of its distinct
    impacts (:mod:`drsearch.index.listcodes`): ``width`` 1 or 2 (bytes per code) and
    ``n_table`` (the table's size) say so; width 8 with no table is the raw layout above.
    Versions 1-4 have neither column: every list is raw.
``arrays(name, dtype, data)``
    dense per-chunk arrays: ``chunk_doc`` (document rowid), ``chunk_len`` (tokens),
    ``chunk_ordinal`` (the chunk's position in its document); and every document's
    (docid, url, title) as one UTF-8 buffer ``doc_fields`` with ``doc_field_offsets``
    (int64: field f of rowid d spans offsets[3d+f] .. offsets[3d+f+1]; see doctable.py).
    Files built before these two existed are read from ``documents`` instead.
"""

from __future__ import annotations

APPLICATION_ID = 0x44525331  # "DRS1"
# A shard of a split index (drsearch.index.shards): version 2 plus ``meta.shard`` and the
# ``shard_terms`` table, whose corpus-wide statistics the engine must use in place of the
# file's own: a reader that does not know them would rank and cut snippets differently.
SHARD_SCHEMA_VERSION = 3
# Chunk text as byte spans of the document text (chunktext.py), the chunk_texts view. A shard of
# a version-4 file is a version-4 file with ``meta.shard`` and ``shard_terms``: no reader that
# predates shards opens version 4, so it needs no version of its own.
SPAN_TEXT_VERSION = 4
# Posting lists whose impacts are codes into a per-term table of its distinct impacts
# (listcodes.py; the terms row's width and n_table). A reader that predates it would take a
# coded list for a damaged one.
CODED_LIST_VERSION = 5
SCHEMA_VERSION = CODED_LIST_VERSION
# The versions this drsearch opens: 1 (no block maxima: ranked with per-term bounds only), 2,
# 3 (a shard of a version-2 file), 4 and 5.
READABLE_VERSIONS = (1, 2, 3, 4, 5)
# The versions a shard may have (a version-3 file is always one).
SHARD_VERSIONS = (SHARD_SCHEMA_VERSION, SPAN_TEXT_VERSION, CODED_LIST_VERSION)
# Postings per block of the stored block maxima (schema version 2).
BLOCK_POSTINGS = 64
DOC_TEXT_CODEC = "zlib"

_CHUNKS_V2 = """CREATE TABLE chunks(
    id INTEGER PRIMARY KEY,
    doc INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    start_word INTEGER NOT NULL,
    end_word INTEGER NOT NULL,
    text TEXT NOT NULL
);"""
_CHUNKS = """CREATE TABLE chunks(
    id INTEGER PRIMARY KEY,
    doc INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    start_word INTEGER NOT NULL,
    end_word INTEGER NOT NULL,
    start_byte INTEGER NOT NULL,
    end_byte INTEGER NOT NULL,
    zstart INTEGER NOT NULL,
    text TEXT
);
CREATE VIEW chunk_texts(id, text) AS SELECT c.id, CASE WHEN c.text IS NULL THEN
    drsearch_chunk_text(t.text, c.zstart, c.start_byte, c.end_byte) ELSE c.text END
    FROM chunks AS c LEFT JOIN doc_texts AS t ON t.id = c.doc;"""

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
{chunks}
CREATE TABLE terms(
    term TEXT PRIMARY KEY, id INTEGER NOT NULL, df INTEGER NOT NULL, dense INTEGER NOT NULL,
    max_impact REAL NOT NULL{codes}
) WITHOUT ROWID;
CREATE TABLE postings(id INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE dense_tfs(id INTEGER PRIMARY KEY, tfs BLOB NOT NULL);
CREATE TABLE arrays(name TEXT PRIMARY KEY, dtype TEXT NOT NULL, data BLOB NOT NULL);
"""
# The layout of the current version, and of version 2 (what a shard of a version-2 file keeps).
_TERM_CODES = ", width INTEGER NOT NULL, n_table INTEGER NOT NULL"
DDL_V2 = DDL.replace("{chunks}", _CHUNKS_V2).replace("{codes}", "")
# Version 4's layout (raw lists; no width, n_table): what a shard of a version-4 file keeps.
DDL_V4 = DDL.replace("{chunks}", _CHUNKS).replace("{codes}", "")
DDL = DDL.replace("{chunks}", _CHUNKS).replace("{codes}", _TERM_CODES)

# A shard's every corpus term (all shards hold the same rows): its corpus-wide df and whether
# only blocked documents hold it, under the blocklist of the split (snippet weights).
SHARD_DDL = "CREATE TABLE shard_terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL, hidden INTEGER NOT NULL) " \
    "WITHOUT ROWID;"
FTS_DDL = (
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunk_texts', content_rowid='id', "
    "tokenize={tokenize}, detail=full)"
)
FTS_DDL_V2 = FTS_DDL.replace("content='chunk_texts'", "content='chunks'")

REQUIRED_TABLES = (
    "meta", "documents", "doc_texts", "urls", "chunks", "chunks_fts", "terms", "postings", "dense_tfs",
    "arrays",
)



def block_count(df: int, block_postings: int = BLOCK_POSTINGS) -> int:
    """How many block maxima follow a sparse list of ``df`` postings (schema version 2): none
    for a list of at most one block (its ``max_impact`` is its only block's maximum), else one
    per ``block_postings`` postings, the last block possibly shorter."""
    return 0 if df <= block_postings else -(-df // block_postings)


def chunk_text_source(version: int) -> str:
    """Where a file of schema ``version`` keeps its chunks' ``(id, text)``: the
    ``chunk_texts`` view (version 4: needs :func:`drsearch.index.chunktext.register` on the
    connection) or the ``chunks`` table."""
    return "chunk_texts" if version >= SPAN_TEXT_VERSION else "chunks"


def has_list_codes(version: int) -> bool:
    """Whether a file of schema ``version`` may store a list's impacts as codes (its ``terms``
    rows have ``width`` and ``n_table``)."""
    return version >= CODED_LIST_VERSION


__all__ = ["APPLICATION_ID", "BLOCK_POSTINGS", "CODED_LIST_VERSION", "DDL", "DDL_V2", "DDL_V4",
           "DOC_TEXT_CODEC", "FTS_DDL", "FTS_DDL_V2",
           "READABLE_VERSIONS", "REQUIRED_TABLES", "SCHEMA_VERSION", "SHARD_DDL", "SHARD_SCHEMA_VERSION",
           "SHARD_VERSIONS", "SPAN_TEXT_VERSION", "block_count", "chunk_text_source", "has_list_codes"]
