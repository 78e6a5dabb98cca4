"""One polite HTTP client per public service: rate limit, retries, timeouts, format checks.

:class:`ServiceClient` wraps an ``httpx.Client`` (pass a transport in to test without
sockets). Every request:

- waits its turn under the service's rate (:class:`RateLimiter`: at most ``rate_per_s``
  request starts per second, shared by the threads of a run);
- is retried through :func:`drsearch.contract.retry.retry` on a connection error, timeout,
  408, 429 or 5xx, honouring ``Retry-After``; after the last try it raises ServiceError;
- is checked against the format the service documents: a JSON endpoint must answer JSON,
  a text endpoint text; an HTML page (a maintenance page, a proxy's login page) is never
  an answer: ServiceError.

A 4xx other than 408/429 in the service's own format is an answer (:class:`Reply` with
``ok`` false): "no such record" is something the model may learn.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from ..contract.retry import GaveUp, RetryPolicy, TryAgain, retry, transient_answer
from .errors import ServiceError

Expect = Literal["json", "text"]
DEFAULT_USER_AGENT = "drsearch-biotools"
"""The toolkit's own ``User-Agent`` (a caller with a contact to give passes its own)."""
MAX_BODY_BYTES = 4_000_000
"""A larger answer is refused (ServiceError): no documented call of these tools is that big."""


class RateLimiter:
    """At most ``rate_per_s`` starts per second: each caller waits for its slot."""

    def __init__(self, rate_per_s: float, clock: Any = time.monotonic, sleep: Any = time.sleep) -> None:
        if not rate_per_s > 0:
            raise ValueError("rate_per_s must be > 0")
        self.interval = 1.0 / rate_per_s
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def wait(self) -> float:
        """Block until this caller may start; returns the seconds waited."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        waited = float(start - now)
        if waited > 0:
            self._sleep(waited)
        return waited


@dataclass(frozen=True, slots=True)
class Reply:
    """A service's answer: HTTP status, whether it is a success, the body as text."""

    status: int
    ok: bool
    text: str
    content_type: str


def _looks_html(content_type: str, text: str) -> bool:
    head = text.lstrip()[:100].lower()
    return "html" in content_type or head.startswith(("<!doctype html", "<html"))


class ServiceClient:
    """Requests to one service at ``base_url`` (``service`` names it in errors)."""

    def __init__(
        self,
        service: str,
        base_url: str,
        rate_per_s: float,
        *,
        policy: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        limiter: RateLimiter | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.service = service
        self.base_url = base_url.rstrip("/")
        self.policy = policy or RetryPolicy(max_attempts=4, backoff_s=1.0, backoff_max_s=20.0, timeout_s=30.0)
        self.limiter = limiter or RateLimiter(rate_per_s)
        self._sleep = sleep  # the retries' waits (a parameter: tests run them on a fake clock)
        self._http = httpx.Client(
            timeout=self.policy.timeout_s,
            transport=transport,
            headers={"user-agent": user_agent},
            follow_redirects=True,
        )

    def close(self) -> None:
        self._http.close()

    def _send(
        self, method: str, path: str, params: dict[str, Any] | None, body: Any, headers: dict[str, str] | None
    ) -> httpx.Response:
        self.limiter.wait()
        try:
            r = self._http.request(method, self.base_url + path, params=params, json=body, headers=headers)
        except httpx.TimeoutException as e:
            raise TryAgain(f"timed out ({e.__class__.__name__})") from None
        except httpx.TransportError as e:
            raise TryAgain(f"unreachable ({e.__class__.__name__}: {e})") from None
        failure = transient_answer(r.status_code, r.headers)
        if failure is not None:
            raise failure
        return r

    def request(
        self,
        method: str,
        path: str,
        expect: Expect,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """``method base_url+path`` with ``params`` (query) or ``body`` (JSON); the answer in the
        expected format. Raises ServiceError when the service cannot give one."""
        where = f"{self.service} {method} {path}"
        try:
            r = retry(lambda _attempt: self._send(method, path, params, body, headers), self.policy,
                      sleep=self._sleep)
        except GaveUp as e:
            raise ServiceError(f"{where}: {e.last.reason} (after {e.attempts} attempt(s))") from None
        if len(r.content) > MAX_BODY_BYTES:
            raise ServiceError(f"{where}: answer of {len(r.content)} bytes, over {MAX_BODY_BYTES}")
        ctype = r.headers.get("content-type", "").lower()
        try:
            text = r.content.decode("utf-8")
        except UnicodeDecodeError:
            raise ServiceError(f"{where}: answer is not UTF-8 text") from None
        if _looks_html(ctype, text):
            raise ServiceError(
                f"{where}: HTTP {r.status_code} answered an HTML page instead of "
                f"{'JSON' if expect == 'json' else 'text'}"
            )
        ok = r.is_success
        if expect == "json" and (ok or "json" in ctype):
            try:
                json.loads(text)
            except ValueError:
                raise ServiceError(
                    f"{where}: HTTP {r.status_code} answered {ctype or 'no content type'} that is not JSON"
                ) from None
        return Reply(r.status_code, ok, text, ctype)


__all__ = ["MAX_BODY_BYTES", "RateLimiter", "Reply", "ServiceClient"]
