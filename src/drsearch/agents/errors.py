"""The exceptions of the agents layer, all under :class:`AgentError`::

    DrsearchError (drsearch.index)
    └── AgentError                 an agent run cannot go on (CLI exit 1 unless noted)
        ├── LLMError               the model endpoint failed for good (after retries)
        │   └── TransientLLMError  connect error, timeout, 429 or 5xx: retried with backoff
        ├── SearcherError          the search backend is unreachable or broke its contract
        ├── ReplayMissError        replay mode met a call that is not in the cache (names it)
        └── RunStoreError          a run directory that cannot be resumed (CLI exit 2)

Tool-level problems (unknown docid, bad ``k``, malformed tool calls) are *not* exceptions:
they are returned to the model as structured tool errors and counted.
"""

from __future__ import annotations

from pydantic import ValidationError

from ..index import DrsearchError


class AgentError(DrsearchError):
    """Base of the agents layer's errors."""

    error_type = "agent_error"


class LLMError(AgentError):
    """The chat-completions endpoint gave a non-retryable error, or retries ran out."""

    error_type = "llm_error"

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class TransientLLMError(LLMError):
    """A failure worth retrying: connection, timeout, HTTP 429 or 5xx."""

    error_type = "llm_transient"

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message, 1)
        self.retry_after_s = retry_after_s


class SearcherError(AgentError):
    """The search backend failed (unreachable, 5xx, or a body that is not JSON)."""

    error_type = "searcher_error"


class ReplayMissError(AgentError):
    """A replay-only cache had no entry for a call; the message names the call."""

    error_type = "replay_miss"


class RunStoreError(AgentError):
    """A run directory is inconsistent with the run asked for (different preset, model, …)."""

    exit_code = 2
    error_type = "run_store"


def describe_validation_error(e: ValidationError, names: dict[str, str] | None = None) -> str:
    """A pydantic error as one line: ``field: message; …`` (``names`` renames fields, e.g. to
    CLI options), with no input values echoed and no documentation links."""
    parts = []
    for err in e.errors():
        field = ".".join(str(x) for x in err["loc"])
        field = (names or {}).get(field, field)
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{field}: {msg}" if field else msg)
    return "; ".join(parts)


__all__ = ["AgentError", "LLMError", "ReplayMissError", "RunStoreError", "SearcherError",
           "TransientLLMError", "describe_validation_error"]
