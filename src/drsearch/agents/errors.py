"""The exceptions of the agents layer, all under :class:`AgentError`::

    DrsearchError (drsearch.index)
    └── AgentError                 an agent run cannot go on (CLI exit 1 unless noted)
        ├── LLMError               the model endpoint refused a request for good: a 4xx other
        │   │                      than 401/403/404/408/429, or a 200 that is not a chat completion
        │   │                      (the model's outcome: status ``model_error``, cached)
        │   └── EndpointError      (also an InfrastructureError) unreachable, 429/5xx after
        │       │                  the retries, or 401/403/404
        │       ├── TransientLLMError  connect error, timeout, 408, 429, 5xx: retried with backoff
        │       └── EndpointProbeError the endpoint failed the check before a run (CLI exit 2)
        ├── InfrastructureError    not the model's doing: status ``infra_error``, never cached,
        │   │                      never a finished episode; a rerun retries it
        │   ├── EndpointError      (above)
        │   ├── SearcherError      the search backend is unreachable or broke its contract
        │   ├── ToolServiceError   a biomedical tool's public API could not answer (unreachable,
        │   │                      HTML instead of JSON, 5xx after the retries)
        │   ├── ReplayMissError    replay mode met a call that is not in the cache (names it)
        │   ├── LocalIOError       a local write failed (disk full, read-only directory, …)
        │   └── SandboxError       the python tool's sandbox could not be built for a call
        ├── RunStoreError          a run directory that cannot be resumed (CLI exit 2)
        ├── SandboxUnavailableError  a preset offers python, the machine cannot sandbox it,
        │                          and ``--allow-unsandboxed-python`` was not given (exit 2)
        └── CacheError             a response cache that cannot be trusted (CLI exit 2): the
            │                      run or grading stops; nothing is replayed or refetched
            ├── CorruptCacheError  a row whose digest does not match its key and body (edited
            │                      or damaged); the message names the key and the file
            ├── UnsignedCacheError a cache from before row digests (``drsearch cache upgrade``)
            └── SnapshotError      a tool snapshot that fails its digests, or was recorded from
                                   other tools or endpoints than the run's preset offers

Tool-level problems (unknown docid, bad ``k``, malformed tool calls) are *not* exceptions:
they are returned to the model as structured tool errors and counted.
"""

from __future__ import annotations

from pydantic import ValidationError

from ..contract import DrsearchError


class AgentError(DrsearchError):
    """Base of the agents layer's errors."""

    error_type = "agent_error"


class LLMError(AgentError):
    """The chat-completions endpoint failed a call for good.

    As such (not an :class:`EndpointError`): it refused the request (a 4xx other than
    401/403/404/408/429, e.g. a prompt over the context length) or sent a 200 that is not a
    chat completion. That is the model's outcome for this request, the same on every try.
    """

    error_type = "llm_error"

    def __init__(self, message: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.attempts = attempts


class InfrastructureError(AgentError):
    """A failure that is not the model's: the episode is unfinished, not answered wrongly.

    Never cached as a response, never counted as a finished episode (a rerun retries the
    question), graded ``missing`` (docs/GRADING.md).
    """

    error_type = "infra_error"


class EndpointError(LLMError, InfrastructureError):
    """The model endpoint cannot be used: unreachable, 429/5xx after the retries, 401/403/404.

    An :class:`LLMError` too, so callers that only ask "did the model call fail?" (the
    judges) keep catching it; the agent loop tells it apart as an infrastructure failure.
    """

    error_type = "endpoint_error"


class TransientLLMError(EndpointError):
    """A failure worth retrying: connection, timeout, HTTP 408, 429 or 5xx."""

    error_type = "llm_transient"

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message, 1)
        self.retry_after_s = retry_after_s


class EndpointProbeError(EndpointError):
    """The model endpoint failed the check ``drsearch run`` makes before writing anything."""

    exit_code = 2
    error_type = "endpoint_probe"


class SearcherError(InfrastructureError):
    """The search backend failed (unreachable, 5xx, or a body that is not JSON)."""

    error_type = "searcher_error"


class ToolServiceError(InfrastructureError):
    """A biomedical tool's service could not answer one call (never an answer, never cached)."""

    error_type = "tool_service_error"


class ReplayMissError(InfrastructureError):
    """A replay-only cache had no entry for a call; the message names the call."""

    error_type = "replay_miss"


class LocalIOError(InfrastructureError):
    """A local read or write failed (disk full, read-only run directory, …)."""

    error_type = "local_io_error"


class SandboxError(InfrastructureError):
    """The python tool's sandbox could not be built for one call (the program never ran)."""

    error_type = "sandbox_error"


class SandboxUnavailableError(AgentError):
    """The python tool is offered but this machine cannot sandbox it (no user namespaces)."""

    exit_code = 2
    error_type = "sandbox_unavailable"


class RunStoreError(AgentError):
    """A run directory is inconsistent with the run asked for (different preset, model, …)."""

    exit_code = 2
    error_type = "run_store"


class CacheError(AgentError):
    """A replay or judge cache that cannot be trusted: not the model's outcome, and not an
    infrastructure failure a rerun could cure, so it ends the command (exit 2)."""

    exit_code = 2
    error_type = "cache_error"


class CorruptCacheError(CacheError):
    """A cache row does not match its digest: its key or body was edited, or the bytes are
    damaged. It is never replayed, and never silently replaced by a live call."""

    error_type = "corrupt_cache"


class UnsignedCacheError(CacheError):
    """A cache written before rows carried digests: an edited row cannot be told apart."""

    error_type = "unsigned_cache"


class SnapshotError(CacheError):
    """A tool snapshot that cannot be used: damaged, edited, or of other tools/endpoints."""

    error_type = "tool_snapshot"


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


__all__ = ["AgentError", "CacheError", "CorruptCacheError", "EndpointError", "EndpointProbeError",
           "InfrastructureError", "LLMError", "LocalIOError", "ReplayMissError", "RunStoreError",
           "SandboxError", "SandboxUnavailableError", "SearcherError", "SnapshotError", "ToolServiceError",
           "TransientLLMError",
           "UnsignedCacheError", "describe_validation_error"]
