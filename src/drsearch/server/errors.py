"""HTTP errors: the server's additions to the exception tree and the one mapping to bodies.

The server extends :mod:`drsearch.index.errors` (whose classes already carry
``http_status`` and ``error_type``)::

    DrsearchError
    ├── InvalidInputError
    │   ├── MalformedBodyError        body not UTF-8 or not JSON (422 invalid_json)
    │   └── PayloadTooLargeError      body over max_body_bytes (413 payload_too_large)
    ├── NoSuchEndpointError           unknown path (404 no_such_endpoint)
    ├── MethodNotAllowedError         known path, wrong method (405 method_not_allowed)
    └── InternalServerError           a bug caught by the last-resort handler (500 internal_error)

Every error response, whatever raised it, is built by :func:`error_response` here:
status ``exc.http_status``, body ``{"error": {"type": exc.error_type, "message": ...}}``.
Messages never carry a traceback and are cut to 500 characters (``drsearch.index.error_body``).
"""

from __future__ import annotations

from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.responses import Response

from ..index import DrsearchError, InvalidInputError, error_body

JSON = "application/json"


class MalformedBodyError(InvalidInputError):
    """The request body is not UTF-8 text or not JSON."""

    error_type = "invalid_json"


class PayloadTooLargeError(InvalidInputError):
    """The request body is larger than the server's ``max_body_bytes``."""

    http_status = 413
    error_type = "payload_too_large"


class NoSuchEndpointError(DrsearchError):
    """No endpoint at this path."""

    http_status = 404
    error_type = "no_such_endpoint"


class MethodNotAllowedError(DrsearchError):
    """The path exists but does not take this method."""

    http_status = 405
    error_type = "method_not_allowed"


class InternalServerError(DrsearchError):
    """An unexpected failure inside the server (a bug); the message names only its class."""

    http_status = 500
    error_type = "internal_error"


def error_response(exc: DrsearchError, background: BackgroundTask | None = None) -> Response:
    """The HTTP response for any drsearch error: the single status/body mapping."""
    headers = {"retry-after": "1"} if exc.http_status == 503 else None
    return Response(error_body(exc.error_type, exc.message), status_code=exc.http_status,
                    media_type=JSON, headers=headers, background=background)


def from_http_exception(exc: HTTPException) -> DrsearchError:
    """The drsearch error for a routing failure Starlette raised (404, 405, others)."""
    if exc.status_code == 404:
        return NoSuchEndpointError("no such endpoint")
    if exc.status_code == 405:
        return MethodNotAllowedError("method not allowed for this endpoint")
    err = InvalidInputError(str(exc.detail))
    err.http_status = exc.status_code if 400 <= exc.status_code < 600 else 400
    return err


__all__ = [
    "InternalServerError",
    "MalformedBodyError",
    "MethodNotAllowedError",
    "NoSuchEndpointError",
    "PayloadTooLargeError",
    "error_body",
    "error_response",
    "from_http_exception",
]
