"""The one exception tree of drsearch.

Every error a caller can act on derives from :class:`DrsearchError`::

    DrsearchError
    ├── InvalidInputError            bad input from a user (CLI exit 2, HTTP 422)
    │   ├── InvalidQueryError        empty, whitespace-only or oversized query
    │   ├── InvalidKError            k outside 1..max_k
    │   ├── InvalidDocumentError     a malformed document given to build
    │   ├── InvalidRequestError      an open() call without exactly one of docid/url
    │   └── BlocklistError           a malformed blocklist file
    ├── CorpusFileError              the index file cannot be used (CLI exit 2, HTTP 500 at start-up)
    │   ├── NotADatabaseError        missing file, not SQLite, or unreadable
    │   ├── IncompatibleIndexError   foreign application_id or schema version, bad meta/arrays
    │   └── CorruptIndexError        damaged bytes met while answering (HTTP 500 corrupt_index)
    ├── DocumentNotFoundError        unknown *or blocked* document (CLI exit 1, HTTP 404)
    ├── QueryTimeoutError            a query ran past its time limit (CLI exit 1, HTTP 503)
    ├── UpstreamUnavailableError     a service the retriever needs (the LLM reranker's endpoint)
    │                                cannot answer (CLI exit 2, HTTP 503; an infra_error in a run)
    ├── BuildError                   an index could not be built (CLI exit 1)
    └── DirectoryBusyError           another live process is writing that output directory (CLI exit 2)

The HTTP status and CLI exit code of each class are declared here, in one place,
as class attributes (``http_status``, ``exit_code``).
"""

from __future__ import annotations


class DrsearchError(Exception):
    """Base of every drsearch error."""

    http_status: int = 500
    exit_code: int = 1
    error_type: str = "drsearch_error"

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.error_type


class InvalidInputError(DrsearchError):
    http_status = 422
    exit_code = 2
    error_type = "invalid_input"


class InvalidQueryError(InvalidInputError):
    error_type = "invalid_query"


class InvalidKError(InvalidInputError):
    error_type = "invalid_k"


class InvalidDocumentError(InvalidInputError):
    error_type = "invalid_document"


class InvalidRequestError(InvalidInputError):
    error_type = "invalid_request"


class BlocklistError(InvalidInputError):
    error_type = "invalid_blocklist"


class CorpusFileError(DrsearchError):
    exit_code = 2
    error_type = "corpus_file"


class NotADatabaseError(CorpusFileError):
    error_type = "not_a_database"


class IncompatibleIndexError(CorpusFileError):
    error_type = "incompatible_index"


class CorruptIndexError(CorpusFileError):
    """The file opened, but bytes read to answer a request are damaged (a flipped bit in a
    compressed text, a page SQLite finds corrupt, a posting list out of order)."""

    http_status = 500
    error_type = "corrupt_index"


class DocumentNotFoundError(DrsearchError):
    """Raised for unknown and blocked documents alike, with the same message shape."""

    http_status = 404
    exit_code = 1
    error_type = "not_found"


class QueryTimeoutError(DrsearchError):
    http_status = 503
    exit_code = 1
    error_type = "query_timeout"


class BuildError(DrsearchError):
    exit_code = 1
    error_type = "build_error"


class DirectoryBusyError(DrsearchError):
    """An output directory (a run, a stage directory, a pool, a release) is locked by another
    live process: two writers would interleave their files (drsearch.contract.dirlock)."""

    http_status = 409
    exit_code = 2
    error_type = "directory_busy"


class UpstreamUnavailableError(DrsearchError):
    """A service the retriever depends on (the LLM reranker's endpoint) is unreachable or
    failed: an infrastructure failure, never answered around (no unreranked fallback)."""

    http_status = 503
    exit_code = 2
    error_type = "upstream_unavailable"


__all__ = [
    "BlocklistError",
    "BuildError",
    "CorpusFileError",
    "CorruptIndexError",
    "DirectoryBusyError",
    "DocumentNotFoundError",
    "DrsearchError",
    "IncompatibleIndexError",
    "InvalidDocumentError",
    "InvalidInputError",
    "InvalidKError",
    "InvalidQueryError",
    "InvalidRequestError",
    "NotADatabaseError",
    "QueryTimeoutError",
    "UpstreamUnavailableError",
]
