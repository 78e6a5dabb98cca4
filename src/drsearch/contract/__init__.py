"""The contract floor: the shared language every layer of drsearch speaks.

Nothing here ranks, stores or serves; it is what rankers, stores and front-ends agree on,
and it imports only the standard library (import-linter keeps it so):

    errors      the one exception tree (HTTP status and CLI exit code on each class)
    request     the request contract: limits, parse_search / parse_open / parse_retrieve,
                canonical JSON, error bodies, the search/open tool schemas
    models      the result values: Hit, Document, SearchResult (their to_dict() are the
                HTTP bodies)
    retriever   the Retriever protocol every front-end is typed against (the engine
                implements it; a second ranker would too)
    searcher    the Searcher protocol agents' tools call (in-process, HTTP, replay)
    atomic      atomic file writes

docs/DESIGN.md ("Layers") draws where this floor sits and where a new ranker or front-end goes.
"""

from .atomic import atomic_output, write_bytes_atomic, write_json_atomic
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
from .models import Document, Hit, SearchResult
from .request import (
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
from .retriever import BlocklistInfo, Retriever
from .searcher import IDENTITY_HEADER, CorpusInfo, Searcher, ToolResponse, fleet_identity

__all__ = [
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
    "BlocklistError",
    "BlocklistInfo",
    "BuildError",
    "CorpusFileError",
    "CorpusInfo",
    "CorruptIndexError",
    "DirectoryBusyError",
    "Document",
    "DocumentNotFoundError",
    "DrsearchError",
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
    "QueryTimeoutError",
    "RetrieveRequest",
    "Retriever",
    "SearchRequest",
    "SearchResult",
    "Searcher",
    "ToolResponse",
    "atomic_output",
    "canonical_bytes",
    "canonical_json",
    "check_k",
    "check_query",
    "error_body",
    "fleet_identity",
    "hit_passage",
    "json_integer",
    "number_from_text",
    "open_parameters",
    "parse_open",
    "parse_retrieve",
    "parse_search",
    "search_parameters",
    "strict_parameters",
    "tool_arguments",
    "write_bytes_atomic",
    "write_json_atomic",
]
