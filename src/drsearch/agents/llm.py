"""An OpenAI-compatible ``/v1/chat/completions`` client over an injected httpx client.

Transient failures (connection errors, timeouts, HTTP 408, 429 and 5xx) are retried with
bounded exponential backoff (``Retry-After``, seconds or an HTTP date, honoured up to the
cap): drsearch.contract.retry's one loop. Running out of
attempts, or a 401/403/404, raises :class:`EndpointError` (an infrastructure failure:
never cached); any other refusal raises a plain :class:`LLMError` (the model's outcome).
:class:`CachedChat` puts the :class:`~drsearch.agents.replay.ReplayCache` in front of it,
keyed by (model, request body). :meth:`ChatClient.probe` checks an endpoint before a run.

Cancellation (Ctrl-C): :meth:`ChatClient.cancel` makes every call in flight, every retry
wait and every later call raise :class:`CallCancelled` at once. A blocking socket read
cannot be interrupted from another thread, so each request runs on a short-lived daemon
thread that the caller waits on; a cancelled caller stops waiting and the abandoned
request ends with the server's reply, the client's timeout or the process.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field

from ..contract import InvalidInputError, error_body
from ..contract import retry as retrying
from .canonical import canonical_bytes
from .errors import EndpointError, EndpointProbeError, LLMError, TransientLLMError
from .replay import ReplayCache

T = TypeVar("T")


class RetryPolicy(BaseModel):
    """Bounded retries: ``max_attempts`` tries in all, waits of ``backoff_s·2^n`` ≤ ``backoff_max_s``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=6, ge=1, le=50)
    backoff_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    timeout_s: float = Field(default=600.0, gt=0)

    def policy(self) -> retrying.RetryPolicy:
        """These settings as the shared policy (drsearch.contract.retry): a ``Retry-After``
        is honoured up to ``backoff_max_s`` as well."""
        return retrying.RetryPolicy(max_attempts=self.max_attempts, backoff_s=self.backoff_s,
                                    backoff_max_s=self.backoff_max_s, timeout_s=self.timeout_s)


@dataclass(frozen=True, slots=True)
class ChatOutcome:
    """One logical call: ``ok`` with the response bytes, or an error body; tries made."""

    ok: bool
    body: bytes
    attempts: int
    cached: bool


class CallCancelled(Exception):
    """A model call abandoned by :meth:`ChatClient.cancel` (or :meth:`CachedChat.cancel`).

    Deliberately not an :class:`AgentError`: an episode that meets it is unfinished, not
    an ``error`` episode, and must not be recorded (nor its call cached).
    """


_UNUSABLE = frozenset({401, 403, 404})
"""Statuses that mean the endpoint, model name or key is wrong (EndpointError, not retried)."""


def _listed_models(r: httpx.Response) -> dict[str, dict[str, Any]]:
    """The entries of an OpenAI-style ``/models`` body by model id (empty when it is not one)."""
    try:
        data = r.json().get("data")
        return {str(m["id"]): m for m in data if isinstance(m, dict) and "id" in m}
    except (ValueError, AttributeError, TypeError):
        return {}


class ChatClient:
    """POSTs request bodies to ``{base_url}/chat/completions`` (base URL ends in ``/v1``)."""

    def __init__(self, client: httpx.Client, retry: RetryPolicy | None = None,
                 sleep: Callable[[float], None] | None = None) -> None:
        """``client`` carries base URL, auth headers and transport; the caller closes it.

        ``sleep`` (tests) replaces the retry wait, which is otherwise cut short by cancel().
        """
        self._client = client
        self.retry = retry or RetryPolicy()
        self._cancelled = threading.Event()
        self._sleep = sleep or self._cancelled.wait
        self._lock = threading.Lock()
        self._in_flight: set[threading.Event] = set()

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

    def cancel(self) -> None:
        """Abandon every call in flight and refuse new ones (CallCancelled); idempotent."""
        with self._lock:
            self._cancelled.set()
            for done in self._in_flight:
                done.set()

    def _check(self) -> None:
        if self._cancelled.is_set():
            raise CallCancelled("the run was cancelled")

    def _post(self, body: bytes) -> httpx.Response:
        """POST on a daemon thread and wait for it or for cancel(), whichever comes first."""
        result: list[httpx.Response | BaseException] = []
        done = threading.Event()

        def call() -> None:
            try:
                result.append(self._client.post("/chat/completions", content=body,
                                                headers={"content-type": "application/json"}))
            except BaseException as e:  # handed to the waiting thread
                result.append(e)
            finally:
                done.set()

        with self._lock:
            self._check()
            self._in_flight.add(done)
        try:
            threading.Thread(target=call, name="llm-call", daemon=True).start()
            done.wait()
        finally:
            with self._lock:
                self._in_flight.discard(done)
        self._check()
        if isinstance(result[0], BaseException):
            raise result[0]
        return result[0]

    def _once(self, body: bytes) -> bytes:
        try:
            r = self._post(body)
        except (httpx.TransportError, httpx.TimeoutException) as e:
            raise TransientLLMError(f"{e.__class__.__name__}: {e}") from None
        again = retrying.transient_answer(r.status_code, r.headers, r.text[:300])
        if again is not None:
            raise TransientLLMError(again.reason, again.retry_after_s)
        if r.status_code in _UNUSABLE:  # a wrong URL, model name or key: not the model's answer
            raise EndpointError(f"HTTP {r.status_code}: {r.text[:300]}")
        if r.status_code != 200:
            raise LLMError(f"HTTP {r.status_code}: {r.text[:300]}")
        try:
            parsed = json.loads(r.content)
            parsed["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise LLMError(f"not a chat completion ({e.__class__.__name__}): {r.text[:300]}") from None
        return r.content

    def complete(self, body: dict[str, Any]) -> tuple[bytes, int]:
        """The raw response bytes and the number of tries.

        Raises EndpointError when it gives up on a transient failure or meets a 401/403/404,
        LLMError for any other refusal, CallCancelled once :meth:`cancel` was called.
        """
        data = canonical_bytes(body)

        def attempt(n: int) -> tuple[bytes, int]:
            self._check()  # cancelled while waiting to retry
            try:
                return self._once(data), n
            except TransientLLMError as e:
                raise retrying.TryAgain(e.message, e.retry_after_s) from None
            except LLMError as e:
                e.attempts = n
                raise

        return self._retrying(attempt)

    def _retrying(self, attempt: Callable[[int], T]) -> T:
        """``attempt`` under the retry policy; EndpointError when it gives up."""
        try:
            return retrying.retry(attempt, self.retry.policy(), sleep=self._sleep)
        except retrying.GaveUp as e:
            raise EndpointError(f"gave up after {e.attempts} attempts: {e.last.reason}", e.attempts) from None

    def _get_models(self) -> httpx.Response:
        """``GET /models`` with the same retries as a completion (transient failures only)."""
        def attempt(_: int) -> httpx.Response:
            self._check()
            try:
                r = self._client.get("/models")
            except (httpx.TransportError, httpx.TimeoutException) as e:
                raise retrying.TryAgain(f"{e.__class__.__name__}: {e}") from None
            again = retrying.transient_answer(r.status_code, r.headers, r.text[:300])
            if again is not None:
                raise again
            return r

        return self._retrying(attempt)

    def probe(self, model: str, *, option: str = "--base-url") -> dict[str, Any] | None:
        """Check that the endpoint serves ``model`` before a run writes anything; returns the
        endpoint's own description of it, its ``/models`` entry (a server's metadata, e.g.
        llama.cpp's context size or whether it constrains decoding), or None when unlisted.

        ``option`` names where the user gave the endpoint (a flag, or a config file's
        field), so the one-line error points at what to fix.

        ``GET /models`` first: a 401/403 there is final; a list naming ``model`` is enough.
        Otherwise (no such route, or ``model`` not listed: some servers take any name) one
        minimal completion (``max_tokens`` 1) decides: unreachable, 5xx after the retries,
        401/403/404 raise :class:`EndpointProbeError` (one line; CLI exit 2); any other
        answer, even a 400 refusing the tiny request, shows the endpoint is there.
        """
        where = str(self._client.base_url).rstrip("/")  # as given (httpx adds a slash)
        try:
            r = self._get_models()
            if r.status_code in (401, 403):
                raise EndpointError(f"GET /models: HTTP {r.status_code}: {r.text[:200]}")
            listed = _listed_models(r) if r.status_code == 200 else {}
            if model in listed:
                return listed[model]
            self.complete({"max_tokens": 1, "messages": [{"content": "Reply with OK.", "role": "user"}],
                           "model": model})
        except EndpointError as e:
            raise EndpointProbeError(f"{option} {where}: the model endpoint is not usable for model "
                                     f"{model!r}: {e.message}") from None
        except LLMError:  # it answered, refusing only this minimal request
            return None
        return None


class CachedChat:
    """A :class:`ChatClient` (or none, for offline replay) behind the replay cache.

    A call the endpoint refuses for good (a plain :class:`LLMError`: the model's outcome)
    is recorded as an error body, so a replay reproduces ``model_error`` episodes too;
    ``replay-then-live`` retries recorded failures live. An :class:`EndpointError`
    (unreachable, 5xx after the retries, 401/403/404) is raised, never recorded.
    """

    def __init__(self, client: ChatClient | None, cache: ReplayCache) -> None:
        self._client = client
        self._cache = cache
        self._cancelled = threading.Event()
        self._observe: Callable[[ChatOutcome], None] | None = None

    def observed(self, observe: Callable[[ChatOutcome], None]) -> CachedChat:
        """This chat (same client, cache and cancellation) reporting every outcome to
        ``observe`` (a generator stage counts its calls and tokens this way)."""
        view = CachedChat(self._client, self._cache)
        view._cancelled = self._cancelled
        view._observe = observe
        return view

    def cancel(self) -> None:
        """Make calls in flight and every later call raise CallCancelled (replay runs too)."""
        self._cancelled.set()
        if self._client is not None:
            self._client.cancel()

    def complete(self, model: str, body: dict[str, Any], describe: str) -> ChatOutcome:
        """One call through the cache; raises CallCancelled after :meth:`cancel`, EndpointError
        when the endpoint cannot be used (nothing cached), ReplayMissError on a replay miss."""
        if self._cancelled.is_set():
            raise CallCancelled("the run was cancelled")
        attempts = [0]
        client = self._client

        def live() -> tuple[bool, bytes]:
            assert client is not None
            try:
                raw, attempts[0] = client.complete(body)
            except EndpointError:  # infrastructure: not an answer, never cached
                raise
            except LLMError as e:
                attempts[0] = e.attempts
                return False, error_body(e.error_type, e.message)
            return True, raw

        ok, raw = self._cache.fetch("llm", ["llm", model, body], describe, None if client is None else live)
        outcome = ChatOutcome(ok, raw, attempts[0], attempts[0] == 0)
        if self._observe is not None:
            self._observe(outcome)
        return outcome


def api_key_from_env(var: str | None) -> str | None:
    """The API key in environment variable ``var`` (``--api-key-env``); None when no variable
    is named. Raises InvalidInputError when it is named but unset or empty."""
    if var is None:
        return None
    key = os.environ.get(var)
    if not key:
        raise InvalidInputError(f"--api-key-env: environment variable {var} is not set")
    return key


__all__ = ["CachedChat", "CallCancelled", "ChatClient", "ChatOutcome", "RetryPolicy", "api_key_from_env"]
