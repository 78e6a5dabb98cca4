"""An OpenAI-compatible ``/v1/chat/completions`` client over an injected httpx client.

Transient failures (connection errors, timeouts, HTTP 429 and 5xx) are retried with
bounded exponential backoff (``Retry-After`` honoured up to the cap); anything else, or
running out of attempts, raises :class:`LLMError`. :class:`CachedChat` puts the
:class:`~drsearch.agents.replay.ReplayCache` in front of it, keyed by (model, request body).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from .canonical import canonical_bytes
from .errors import LLMError, TransientLLMError
from .replay import ReplayCache
from .searcher import error_body


class RetryPolicy(BaseModel):
    """Bounded retries: ``max_attempts`` tries in all, waits of ``backoff_s·2^n`` ≤ ``backoff_max_s``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=6, ge=1, le=50)
    backoff_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    timeout_s: float = Field(default=600.0, gt=0)

    def wait_s(self, attempt: int, retry_after_s: float | None) -> float:
        """Seconds to wait before try ``attempt`` (1-based count of failures so far)."""
        wait = float(self.backoff_s * 2 ** (attempt - 1))
        if retry_after_s is not None:
            wait = max(wait, retry_after_s)
        return min(wait, self.backoff_max_s)


@dataclass(frozen=True, slots=True)
class ChatOutcome:
    """One logical call: ``ok`` with the response bytes, or an error body; tries made."""

    ok: bool
    body: bytes
    attempts: int
    cached: bool


def _retry_after(r: httpx.Response) -> float | None:
    try:
        return float(r.headers["retry-after"])
    except (KeyError, ValueError):
        return None


class ChatClient:
    """POSTs request bodies to ``{base_url}/chat/completions`` (base URL ends in ``/v1``)."""

    def __init__(self, client: httpx.Client, retry: RetryPolicy | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        """``client`` carries base URL, auth headers and transport; the caller closes it."""
        self._client = client
        self.retry = retry or RetryPolicy()
        self._sleep = sleep

    @classmethod
    def connect(cls, base_url: str, api_key: str | None = None, *, retry: RetryPolicy | None = None,
                transport: httpx.BaseTransport | None = None) -> ChatClient:
        policy = retry or RetryPolicy()
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, transport=transport,
                              timeout=policy.timeout_s)
        return cls(client, policy)

    def close(self) -> None:
        self._client.close()

    def _once(self, body: bytes) -> bytes:
        try:
            r = self._client.post("/chat/completions", content=body,
                                  headers={"content-type": "application/json"})
        except (httpx.TransportError, httpx.TimeoutException) as e:
            raise TransientLLMError(f"{e.__class__.__name__}: {e}") from None
        if r.status_code == 429 or r.status_code >= 500:
            raise TransientLLMError(f"HTTP {r.status_code}: {r.text[:300]}", _retry_after(r))
        if r.status_code != 200:
            raise LLMError(f"HTTP {r.status_code}: {r.text[:300]}")
        try:
            parsed = json.loads(r.content)
            parsed["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise LLMError(f"not a chat completion ({e.__class__.__name__}): {r.text[:300]}") from None
        return r.content

    def complete(self, body: dict[str, Any]) -> tuple[bytes, int]:
        """The raw response bytes and the number of tries; raises LLMError when it gives up."""
        data = canonical_bytes(body)
        for attempt in range(1, self.retry.max_attempts + 1):
            try:
                return self._once(data), attempt
            except TransientLLMError as e:
                if attempt == self.retry.max_attempts:
                    raise LLMError(f"gave up after {attempt} attempts: {e.message}", attempt) from None
                self._sleep(self.retry.wait_s(attempt, e.retry_after_s))
            except LLMError as e:
                e.attempts = attempt
                raise
        raise AssertionError("unreachable")


class CachedChat:
    """A :class:`ChatClient` (or none, for offline replay) behind the replay cache.

    A call that fails for good is recorded as an error body, so a replay reproduces error
    episodes too; ``replay-then-live`` retries recorded failures live.
    """

    def __init__(self, client: ChatClient | None, cache: ReplayCache) -> None:
        self._client = client
        self._cache = cache

    def complete(self, model: str, body: dict[str, Any], describe: str) -> ChatOutcome:
        attempts = [0]
        client = self._client

        def live() -> tuple[bool, bytes]:
            assert client is not None
            try:
                raw, attempts[0] = client.complete(body)
            except LLMError as e:
                attempts[0] = e.attempts
                return False, error_body(e.error_type, e.message)
            return True, raw

        ok, raw = self._cache.fetch("llm", ["llm", model, body], describe, None if client is None else live)
        return ChatOutcome(ok, raw, attempts[0], attempts[0] == 0)


__all__ = ["CachedChat", "ChatClient", "ChatOutcome", "RetryPolicy"]
