"""The drsearch engine: a frozen SQLite FTS5 index searched with exact BM25 (C kernel; numpy
where no compiler was available). ``Engine`` implements ``drsearch.contract.Retriever``.

Public API (pinned by tests/index/test_public_api.py)::

    build(docs, path, settings)            -> BuildReport  (chunks=[SourceChunk]: pre-chunked)
    Engine.open(path, blocklist)           -> Engine (.search, .open_document, .stats); a release's
                                              database gets the release's list (releases.py)
    BlockList.from_file(path)
    canonicalize_url(url), chunk_spans(n), chunk_words(words)
    read_sqlite_header(path), sha256_file(path), quick_check(path),
    fts5_integrity_check(path), missing_docids(path, docids)   (never write the file)

The shared language (errors, the request contract, Hit/Document/SearchResult, the Retriever
and Searcher protocols, atomic writes) is ``drsearch.contract``, the floor below this package.

The typed build settings (``BuildSettings``, ``TokenizerPreset``: pydantic, ~150 ms) are
imported on first use (module ``__getattr__``): a process that only searches never needs them.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from .blocklist import BlockList
from .build import BuildReport, SourceChunk, SourcedDoc, build, read_jsonl
from .chunking import CHUNK_STRIDE, CHUNK_WORDS, ChunkSpan, chunk_spans, chunk_words, split_words
from .engine import Engine, EngineOptions
from .filehash import cached_sha256
from .integrity import (
    SQLiteHeader,
    document_problems,
    fts5_integrity_check,
    header_problems,
    missing_docids,
    posting_problems,
    quick_check,
    read_sqlite_header,
    sha256_file,
)
from .native import gil_poll_ns
from .query import ParsedQuery, parse_query
from .releases import Release, ReleasePolicy, locate, policy_for, release_holding
from .urls import canonicalize_url

if TYPE_CHECKING:
    from .settings import BuildSettings, TokenizerPreset

# name -> the module that defines it, imported on first access (drsearch._lazy)
_LAZY = {"BuildSettings": "settings", "TokenizerPreset": "settings"}
__getattr__ = lazy_getattr(__name__, _LAZY, globals())

__all__ = [
    "CHUNK_STRIDE",
    "CHUNK_WORDS",
    "BlockList",
    "BuildReport",
    "BuildSettings",
    "ChunkSpan",
    "Engine",
    "EngineOptions",
    "ParsedQuery",
    "Release",
    "ReleasePolicy",
    "SQLiteHeader",
    "SourceChunk",
    "SourcedDoc",
    "TokenizerPreset",
    "build",
    "cached_sha256",
    "canonicalize_url",
    "chunk_spans",
    "chunk_words",
    "document_problems",
    "fts5_integrity_check",
    "gil_poll_ns",
    "header_problems",
    "locate",
    "missing_docids",
    "parse_query",
    "policy_for",
    "posting_problems",
    "quick_check",
    "read_jsonl",
    "read_sqlite_header",
    "release_holding",
    "sha256_file",
    "split_words",
]
