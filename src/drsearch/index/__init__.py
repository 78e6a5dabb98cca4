"""The drsearch engine: a frozen SQLite FTS5 index searched with exact BM25 in numpy.

Public API (pinned by tests/index/test_public_api.py)::

    build(docs, path, settings)            -> BuildReport  (chunks=[SourceChunk]: pre-chunked)
    Engine.open(path, blocklist)           -> Engine (.search, .open_document, .stats)
    BlockList.from_file(path)
    canonicalize_url(url), chunk_spans(n), chunk_words(words)
    read_sqlite_header(path), sha256_file(path), quick_check(path),
    fts5_integrity_check(path), missing_docids(path, docids)   (never write the file)
"""

from .blocklist import BlockList
from .build import BuildReport, SourceChunk, SourcedDoc, build, read_jsonl
from .chunking import CHUNK_STRIDE, CHUNK_WORDS, ChunkSpan, chunk_spans, chunk_words, split_words
from .engine import MAX_K, MAX_RUN_K, Engine, check_k
from .errors import (
    BlocklistError,
    BuildError,
    CorpusFileError,
    CorruptIndexError,
    DocumentNotFoundError,
    DrsearchError,
    IncompatibleIndexError,
    InvalidDocumentError,
    InvalidInputError,
    InvalidKError,
    InvalidQueryError,
    InvalidRequestError,
    NotADatabaseError,
    QueryTimeoutError,
)
from .integrity import (
    SQLiteHeader,
    fts5_integrity_check,
    header_problems,
    missing_docids,
    quick_check,
    read_sqlite_header,
    sha256_file,
)
from .models import BuildSettings, Document, Hit, SearchResult, dumps
from .query import MAX_QUERY_CHARS, MAX_QUERY_TERMS, ParsedQuery, parse_query
from .searcher import IDENTITY_HEADER, CorpusInfo, Searcher, ToolResponse, error_body, fleet_identity
from .urls import canonicalize_url

__all__ = [
    "CHUNK_STRIDE",
    "CHUNK_WORDS",
    "IDENTITY_HEADER",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MAX_RUN_K",
    "BlockList",
    "BlocklistError",
    "BuildError",
    "BuildReport",
    "BuildSettings",
    "ChunkSpan",
    "CorpusFileError",
    "CorpusInfo",
    "CorruptIndexError",
    "Document",
    "DocumentNotFoundError",
    "DrsearchError",
    "Engine",
    "Hit",
    "IncompatibleIndexError",
    "InvalidDocumentError",
    "InvalidInputError",
    "InvalidKError",
    "InvalidQueryError",
    "InvalidRequestError",
    "NotADatabaseError",
    "ParsedQuery",
    "QueryTimeoutError",
    "SQLiteHeader",
    "SearchResult",
    "Searcher",
    "SourceChunk",
    "SourcedDoc",
    "ToolResponse",
    "build",
    "canonicalize_url",
    "check_k",
    "chunk_spans",
    "chunk_words",
    "dumps",
    "error_body",
    "fleet_identity",
    "fts5_integrity_check",
    "header_problems",
    "missing_docids",
    "parse_query",
    "quick_check",
    "read_jsonl",
    "read_sqlite_header",
    "sha256_file",
    "split_words",
]
