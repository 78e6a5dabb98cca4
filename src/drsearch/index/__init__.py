"""The drsearch engine: a frozen SQLite FTS5 index searched with exact BM25 in numpy.

Public API (pinned by tests/index/test_public_api.py)::

    build(docs, path, settings)            -> BuildReport  (chunks=[SourceChunk]: pre-chunked)
    Engine.open(path, blocklist)           -> Engine (.search, .open_document, .stats); a release's
                                              database gets the release's list (releases.py)
    BlockList.from_file(path)
    canonicalize_url(url), chunk_spans(n), chunk_words(words)
    read_sqlite_header(path), sha256_file(path), quick_check(path),
    fts5_integrity_check(path), missing_docids(path, docids)   (never write the file)
    the request contract (drsearch.index.contract): Limits, parse_search, parse_open,
    parse_retrieve, canonical_json, error_body, the search/open tool schemas

The typed build settings (``BuildSettings``, ``TokenizerPreset``: pydantic, ~150 ms) are
imported on first use (module ``__getattr__``): a process that only searches never needs them.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from .blocklist import BlockList
from .build import BuildReport, SourceChunk, SourcedDoc, build, read_jsonl
from .chunking import CHUNK_STRIDE, CHUNK_WORDS, ChunkSpan, chunk_spans, chunk_words, split_words
from .contract import (
    DEFAULT_K,
    DEFAULT_LIMITS,
    DEFAULT_MAX_BATCH_QUERIES,
    DEFAULT_TIME_LIMIT_S,
    MAX_JSON_INT,
    MAX_K,
    MAX_MESSAGE_CHARS,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    MAX_RUN_K,
    OPEN_TOOL,
    SEARCH_TOOL,
    Limits,
    OpenRequest,
    RetrieveRequest,
    SearchRequest,
    canonical_bytes,
    canonical_json,
    check_k,
    check_query,
    error_body,
    hit_passage,
    json_integer,
    number_from_text,
    open_parameters,
    parse_open,
    parse_retrieve,
    parse_search,
    search_parameters,
    strict_parameters,
    tool_arguments,
)
from .engine import Engine
from .errors import (
    BlocklistError,
    BuildError,
    CorpusFileError,
    CorruptIndexError,
    DirectoryBusyError,
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
from .models import Document, Hit, SearchResult
from .query import ParsedQuery, parse_query
from .scoring import gil_poll_ns
from .searcher import IDENTITY_HEADER, CorpusInfo, Searcher, ToolResponse, fleet_identity
from .urls import canonicalize_url

if TYPE_CHECKING:
    from .settings import BuildSettings, TokenizerPreset

# name -> the module that defines it, imported on first access (drsearch._lazy)
_LAZY = {"BuildSettings": "settings", "TokenizerPreset": "settings"}
__getattr__ = lazy_getattr(__name__, _LAZY, globals())

__all__ = [
    "CHUNK_STRIDE",
    "CHUNK_WORDS",
    "DEFAULT_K",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_BATCH_QUERIES",
    "DEFAULT_TIME_LIMIT_S",
    "IDENTITY_HEADER",
    "MAX_JSON_INT",
    "MAX_K",
    "MAX_MESSAGE_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MAX_RUN_K",
    "OPEN_TOOL",
    "SEARCH_TOOL",
    "BlockList",
    "BlocklistError",
    "BuildError",
    "BuildReport",
    "BuildSettings",
    "ChunkSpan",
    "CorpusFileError",
    "CorpusInfo",
    "CorruptIndexError",
    "DirectoryBusyError",
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
    "Limits",
    "NotADatabaseError",
    "OpenRequest",
    "ParsedQuery",
    "QueryTimeoutError",
    "RetrieveRequest",
    "SQLiteHeader",
    "SearchRequest",
    "SearchResult",
    "Searcher",
    "SourceChunk",
    "SourcedDoc",
    "TokenizerPreset",
    "ToolResponse",
    "build",
    "canonical_bytes",
    "canonical_json",
    "canonicalize_url",
    "check_k",
    "check_query",
    "chunk_spans",
    "chunk_words",
    "error_body",
    "fleet_identity",
    "fts5_integrity_check",
    "gil_poll_ns",
    "header_problems",
    "hit_passage",
    "json_integer",
    "missing_docids",
    "number_from_text",
    "open_parameters",
    "parse_open",
    "parse_query",
    "parse_retrieve",
    "parse_search",
    "quick_check",
    "read_jsonl",
    "read_sqlite_header",
    "search_parameters",
    "sha256_file",
    "split_words",
    "strict_parameters",
    "tool_arguments",
]
