"""HTTP errors: the server's additions to the exception tree and the one mapping to bodies.

The server extends :mod:`drsearch.contract.errors` (whose classes already carry
``http_status`` and ``error_type``)::

    DrsearchError
    ├── InvalidInputError
    │   ├── MalformedBodyError        body not UTF-8 or not JSON (422 invalid_json)
    │   ├── PayloadTooLargeError      body over max_body_bytes (413 payload_too_large)
    │   └── ResponseTooLargeError     a /retrieve answer over max_response_bytes (422 response_too_large)
    ├── NoSuchEndpointError           unknown path (404 no_such_endpoint)
    ├── MethodNotAllowedError         known path, wrong method (405 method_not_allowed, with Allow)
    ├── RequestTimeoutError           body not received within the request's time limit (408)
    └── InternalServerError           a bug caught by the last-resort handler (500 internal_error)

Every error response, whatever raised it, is built by :func:`error_response` here:
status ``exc.http_status``, body ``{"error": {"type": exc.error_type, "message": ...}}``.
Messages never carry a traceback and are cut to 500 characters (``drsearch.index.error_body``).
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.responses import Response

from ..contract import DrsearchError, InvalidInputError, error_body

JSON = "application/json"


class MalformedBodyError(InvalidInputError):
    """The request body is not UTF-8 text or not JSON."""

    error_type = "invalid_json"


class PayloadTooLargeError(InvalidInputError):
    """The request body is larger than the server's ``max_body_bytes``."""

    http_status = 413
    error_type = "payload_too_large"


class ResponseTooLargeError(InvalidInputError):
    """A ``/retrieve`` batch whose answer would exceed the server's ``max_response_bytes``.

    422, not 413: the request is small and well formed; what it asks for is too much, and
    asking again gets the same answer (as for a batch over ``max_batch_results``)."""

    error_type = "response_too_large"


class NoSuchEndpointError(DrsearchError):
    """No endpoint at this path."""

    http_status = 404
    error_type = "no_such_endpoint"


class MethodNotAllowedError(DrsearchError):
    """The path exists but does not take this method."""

    http_status = 405
    error_type = "method_not_allowed"


class RequestTimeoutError(DrsearchError):
    """The request body did not arrive within the request's time limit."""

    http_status = 408
    error_type = "request_timeout"


class InternalServerError(DrsearchError):
    """An unexpected failure inside the server (a bug); the message names only its class."""

    http_status = 500
    error_type = "internal_error"


def error_response(exc: DrsearchError, headers: Mapping[str, str] | None = None) -> Response:
    """The HTTP response for any drsearch error: the single status/body mapping.

    503 carries ``retry-after: 1``; 405 the ``allow`` header of the path; 408 closes the
    connection (the rest of the body may still be on its way).
    """
    extra = dict(headers or {})
    if exc.http_status == 503:
        extra["retry-after"] = "1"
    elif exc.http_status == 408:
        extra["connection"] = "close"
    return Response(error_body(exc.error_type, exc.message), status_code=exc.http_status,
                    media_type=JSON, headers=extra or None)


def from_http_exception(exc: HTTPException) -> tuple[DrsearchError, dict[str, str]]:
    """The drsearch error (and headers to keep) for a routing failure Starlette raised."""
    if exc.status_code == 404:
        return NoSuchEndpointError("no such endpoint"), {}
    if exc.status_code == 405:
        allow = {k.lower(): v for k, v in (exc.headers or {}).items()}.get("allow", "")
        return MethodNotAllowedError(f"method not allowed for this endpoint (allowed: {allow})"), \
            {"allow": allow}
    err = InvalidInputError(str(exc.detail))
    err.http_status = exc.status_code if 400 <= exc.status_code < 600 else 400
    return err, {}


__all__ = [
    "InternalServerError",
    "MalformedBodyError",
    "MethodNotAllowedError",
    "NoSuchEndpointError",
    "PayloadTooLargeError",
    "RequestTimeoutError",
    "ResponseTooLargeError",
    "error_body",
    "error_response",
    "from_http_exception",
]
