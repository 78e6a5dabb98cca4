"""The biomedical tools' two failures, on the project's one error tree::

    DrsearchError (drsearch.contract)
    ├── InvalidInputError
    │   └── InvalidArgumentsError  a tool call outside its schema: a tool error the model
    │                              sees (``invalid_arguments``), never sent to the service
    └── ServiceError               the service cannot answer: unreachable, timed out, 429/5xx
                                   after the retries, HTML or garbage instead of its documented
                                   format. An infrastructure failure (the agents layer records
                                   the episode ``infra_error``), never an answer, never cached.

A 4xx the service sends in its own format (a 404 "no matches", a 400 for a bad query) is an
answer: the model sees it as a tool error and it is cached like any other answer.
"""

from __future__ import annotations

from ..contract import DrsearchError, InvalidInputError


class InvalidArgumentsError(InvalidInputError):
    """A biomedical tool call whose arguments do not fit the tool's schema."""

    error_type = "invalid_arguments"


class ServiceError(DrsearchError):
    """A public API could not be used for one call (the message names the service and why)."""

    error_type = "service_unavailable"


__all__ = ["InvalidArgumentsError", "ServiceError"]
