"""Typed, frozen settings of the HTTP server, built once and passed in.

``ServerSettings`` configures one app (limits, defaults, where counters live);
``ServeConfig`` adds what a uvicorn worker needs to build that app by itself (the
database and blocklist paths). ``drsearch serve`` hands a ``ServeConfig`` to its
workers as JSON in the ``DRSEARCH_SERVE_CONFIG`` environment variable, because
uvicorn starts each worker from an import string and passes it no arguments.

Every field is documented in docs/SERVER.md (a test keeps it so).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..contract import (
    DEFAULT_K,
    DEFAULT_TIME_LIMIT_S,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    InvalidInputError,
    Limits,
)

CONFIG_ENV = "DRSEARCH_SERVE_CONFIG"

# A quarter of the default max_connections: no one peer address can keep the others out.
DEFAULT_MAX_CLIENT_CONNECTIONS = 250

UnknownFields = Literal["reject", "ignore"]  # the request contract's (Limits.unknown_fields)
VerifyLevel = Literal["none", "fast", "deep"]
# Where the served blocklist came from (shown in /health): a release's own list, another
# file overriding it, none although the database is a release's, a plain file, or none.
BlocklistOrigin = Literal["release", "release-override", "release-none", "file", "none"]


class ServerSettings(BaseModel):
    """Limits and defaults of one server app. Immutable; invalid values raise on creation.

    - ``max_k``: the largest ``k`` a search may ask for (1..100, the engine's own cap).
    - ``default_k``: ``k`` when a search omits it (default ``min(10, max_k)``); must not
      exceed ``max_k``.
    - ``time_limit_s``: the time limit of one request, from the moment its handler
      starts: reading the body (408 ``request_timeout`` past it), parsing, postings,
      ranking, snippets and encoding (503 ``query_timeout`` past it).
    - ``max_body_bytes``: a request body larger than this is answered 413 unread.
    - ``max_query_chars``: longer queries are answered 422 (the engine's own cap at most).
    - ``max_query_terms``: queries with more distinct terms are answered 422 (at most the
      engine's cap, 1,024: Lucene's default clause limit).
    - ``idle_timeout_s``: a connection with no request in progress (just opened, or
      after a response) is closed after this many seconds without a byte.
    - ``header_timeout_s``: a request's line and headers must arrive within this many
      seconds of its first byte (408 and closed otherwise).
    - ``max_header_bytes``: a longer request head gets 431 and the connection is closed.
    - ``max_connections``: open connections per worker process; one more gets 503 and is
      closed at once.
    - ``max_client_connections``: open connections per worker process from one peer
      address; one more gets 503 ``too_many_client_connections`` and is closed at once (one
      client cannot hold all ``max_connections``). Behind a proxy every client has the
      proxy's address: raise it to ``max_connections`` there.
    - ``max_batch_queries``: the most queries one ``POST /retrieve`` may send (422 beyond).
    - ``max_batch_results``: the most results one ``POST /retrieve`` may ask for
      (``len(queries) × topk``); a larger batch is answered 422 before any query runs.
    - ``max_response_bytes``: the largest ``POST /retrieve`` answer; a batch whose answer
      would be larger is stopped once its encoded queries pass it (422 ``response_too_large``).
    - ``batch_threads``: threads per worker process that run the queries of a
      ``/retrieve`` batch in parallel (the ranking kernel releases the GIL).
    - ``unknown_fields``: ``reject`` (422 naming the field) or ``ignore`` request fields
      the API does not define.
    - ``metrics_dir``: the per-run directory where each worker process keeps its counters
      (one file per process; /stats and /metrics sum them). ``None``: in-memory counters
      of this process only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_k: int = Field(default=MAX_K, ge=1, le=MAX_K)
    default_k: int = Field(default=DEFAULT_K, ge=1, le=MAX_K)
    time_limit_s: float = Field(default=DEFAULT_TIME_LIMIT_S, gt=0, le=3600)
    max_body_bytes: int = Field(default=1 << 20, ge=1024, le=1 << 30)
    max_query_chars: int = Field(default=MAX_QUERY_CHARS, ge=1, le=MAX_QUERY_CHARS)
    max_query_terms: int = Field(default=MAX_QUERY_TERMS, ge=1, le=MAX_QUERY_TERMS)
    idle_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    header_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    max_header_bytes: int = Field(default=64 << 10, ge=1024, le=16 << 20)
    max_connections: int = Field(default=1000, ge=1, le=1_000_000)
    max_client_connections: int = Field(default=DEFAULT_MAX_CLIENT_CONNECTIONS, ge=1, le=1_000_000)
    max_batch_queries: int = Field(default=512, ge=1, le=10_000)
    max_batch_results: int = Field(default=5120, ge=1, le=10_000_000)
    max_response_bytes: int = Field(default=16 << 20, ge=64 << 10, le=1 << 30)
    batch_threads: int = Field(default=4, ge=1, le=256)
    unknown_fields: UnknownFields = "reject"
    metrics_dir: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_k_follows_max_k(cls, data: Any) -> Any:
        if isinstance(data, dict) and "default_k" not in data and isinstance(data.get("max_k"), int):
            return {**data, "default_k": min(DEFAULT_K, data["max_k"])}
        return data

    @model_validator(mode="after")
    def _default_k_within_max(self) -> ServerSettings:
        if self.default_k > self.max_k:
            raise ValueError(f"default_k ({self.default_k}) must not exceed max_k ({self.max_k})")
        return self

    def limits(self) -> Limits:
        """The request contract's limits of this app (``drsearch.contract.request``)."""
        return Limits(max_k=self.max_k, default_k=self.default_k, max_query_chars=self.max_query_chars,
                      max_query_terms=self.max_query_terms, unknown_fields=self.unknown_fields)


class ServeConfig(BaseModel):
    """Everything a worker process needs to build its app: files plus ``ServerSettings``.

    ``blocked_docids`` ``None`` means no blocklist: every document is served.
    ``blocklist_origin`` says why (``/health`` shows it; None: ``file`` or ``none``), and
    ``release_blocklist_sha256`` is the SHA-256 of the served release's own list.
    ``blocklist_sha256`` is the SHA-256 of ``blocked_docids`` as the parent read it: a worker
    that reads other bytes (the file changed after ``drsearch serve`` started) refuses to
    start, so that no two workers of one server hide different documents.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    database: Path
    blocked_docids: Path | None = None
    blocklist_origin: BlocklistOrigin | None = None
    release_blocklist_sha256: str | None = None
    blocklist_sha256: str | None = None
    settings: ServerSettings = ServerSettings()
    retriever: str = "bm25"  # a spec, bm25|dense|hybrid[:rrf|:linear=W] (drsearch.dense.spec)
    vectors: Path | None = None  # the dense retriever's sidecar (None: DATABASE.vectors)
    embed_model: str | None = None  # --embed-model: the vectors' model (None: the pinned MiniLM)
    rerank: dict[str, Any] | None = None  # +rerank: drsearch.dense.RerankConfig's fields

    def to_env(self) -> dict[str, str]:
        """The environment variables that carry this config to uvicorn workers."""
        return {CONFIG_ENV: self.model_dump_json()}

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ServeConfig:
        """Read the config a ``drsearch serve`` parent left in the environment.

        Raises InvalidInputError when the variable is missing or malformed.
        """
        raw = (os.environ if environ is None else environ).get(CONFIG_ENV)
        if not raw:
            raise InvalidInputError(f"{CONFIG_ENV} is not set: start workers with `drsearch serve`")
        try:
            return cls.model_validate_json(raw)
        except ValidationError as e:
            raise InvalidInputError(f"{CONFIG_ENV} is malformed: {e.errors()[0]['msg']}") from e


__all__ = ["CONFIG_ENV", "BlocklistOrigin", "ServeConfig", "ServerSettings", "UnknownFields", "VerifyLevel"]
