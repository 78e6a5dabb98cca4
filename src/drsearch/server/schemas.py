"""Response shapes, for the OpenAPI document only.

Handlers never build these models: bodies come from the engine's ``to_dict()`` and are
serialised once (see :mod:`drsearch.server.encoding`). The models describe those
dictionaries exactly, and the schemathesis tests check every response against them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    type: str = Field(description="machine-readable kind, e.g. invalid_k, not_found")
    message: str = Field(description="the reason, for a person")


class ErrorResponse(BaseModel):
    """Every 4xx/5xx body."""

    error: ErrorDetail


class Chunk(BaseModel):
    ordinal: int = Field(description="the chunk's position in its document (0-based)")
    text: str


class HitBody(BaseModel):
    rank: int
    docid: str
    url: str
    title: str
    score: float = Field(description="BM25 of the best chunk, as FTS5's bm25() computes it")
    chunk: Chunk
    snippet: str


class SearchResponse(BaseModel):
    query: str
    k: int
    results: list[HitBody]


class OpenResponse(BaseModel):
    docid: str
    url: str
    title: str
    text: str = Field(description="text[offset:offset+length] of the document")
    metadata: dict[str, Any]
    total_length: int = Field(description="characters in the whole text")
    next_offset: int | None = Field(description="offset of the next page; null on the last")


class RetrievedDocument(BaseModel):
    id: str = Field(description="the docid")
    contents: str = Field(description="title, a newline, then the text of the best chunk")


class ScoredDocument(BaseModel):
    document: RetrievedDocument
    score: float = Field(description="BM25 of the best chunk, as /search reports it")


class RetrieveResponse(BaseModel):
    """Search-R1's retrieval server body: one list per query, in query order."""

    result: list[list[ScoredDocument]] | list[list[RetrievedDocument]] = Field(
        description="with return_scores: {document, score} items; without: bare documents")


class CorpusIdentity(BaseModel):
    identity: str
    schema_version: int
    documents: int
    chunks: int


class BlocklistSummary(BaseModel):
    enabled: bool = Field(description="false: served without a blocklist, every document visible")
    sha256: str
    count: int = Field(description="docids the blocklist lists")
    matched: int = Field(description="listed docids that are documents of this corpus")
    origin: str = Field(description="release (the release's own list), release-override, release-none, "
                                    "file, or none")
    release_sha256: str | None = Field(description="SHA-256 of the served release's own blocklist")


class VerifyState(BaseModel):
    state: str = Field(description="background deep verification: off, pending, ok or failed")
    message: str = Field(description="why it failed (empty otherwise)")


class HealthResponse(BaseModel):
    status: str = Field(description="ok, or degraded: see problems")
    problems: list[str] = Field(description="damage met while serving, a failed deep verification")
    verify: VerifyState
    version: str
    corpus: CorpusIdentity
    blocklist: BlocklistSummary


class StatsResponse(BaseModel):
    """Engine stats (as ``drsearch stats --json``) plus ``server`` counters of all workers."""

    documents: int
    chunks: int
    content_identity: str
    schema_version: int
    blocklist: dict[str, Any]
    build: dict[str, Any]
    server: dict[str, Any]


ERRORS: dict[int | str, dict[str, Any]] = {
    408: {"model": ErrorResponse, "description": "request body not received within the time limit"},
    413: {"model": ErrorResponse, "description": "request body over the size limit"},
    422: {"model": ErrorResponse, "description": "malformed request (the message says why)"},
    500: {"model": ErrorResponse,
          "description": "corrupt_index: damaged bytes in the index file (run `drsearch validate --deep`)"},
}

__all__ = [
    "ERRORS",
    "ErrorResponse",
    "HealthResponse",
    "OpenResponse",
    "RetrieveResponse",
    "SearchResponse",
    "StatsResponse",
]
