"""Outbound calls, retried one way: a policy, one ``Retry-After`` parser, one retry loop.

Every module that calls another server (the crawler, the model and search clients, the
SPARQL and public-API clients of the generators, the citation resolvers, the server
launcher's readiness poll) retries through :func:`retry` (or :func:`retry_async`) under a
:class:`RetryPolicy`; only the standard library is used, so every layer can. What counts as
a transient failure is the caller's to say (it knows its HTTP client's exceptions): an
attempt raises :class:`TryAgain`, most often built by :func:`transient_answer` from a
response's status and headers. The rules, in one place:

- retried: HTTP 408, 429 and every 5xx (:data:`RETRY_STATUSES`; a 5xx is the server's
  failure, not the request's), and whatever the caller maps to :class:`TryAgain`
  (connection errors, timeouts); any other answer is final;
- the wait after the n-th failure is ``backoff_s · 2^(n-1)`` (times ``1 + jitter·U[0,1)``),
  at most ``backoff_max_s``; a ``Retry-After`` the server sent makes it at least that many
  seconds, honoured up to ``retry_after_max_s`` (a server's value is a floor: retrying
  sooner only earns another refusal);
- it gives up after ``max_attempts`` tries, or when the next try would start after
  ``deadline_s`` (from the first try), raising :class:`GaveUp` with the last reason.

Sleep, clock and randomness are parameters, so tests run the loop on a fake clock.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import TypeVar

T = TypeVar("T")

RETRY_STATUSES = frozenset({408, 429, *range(500, 600)})
"""Answers worth another try: request timeout, too many requests, and every server error."""

_DELTA_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # RFC 9110's 1*DIGIT, plus a fraction some servers send


def parse_retry_after(value: str | None, *, now: float | None = None,
                      cap: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (RFC 9110 §10.2.3), or None.

    ``value`` is delta-seconds (``120``; a fraction is accepted) or an HTTP date in any of
    the three formats (IMF-fixdate, obsolete RFC 850, asctime; a date without a zone is UTC).
    A date in the past is 0; None for an absent, empty, negative or unreadable value.
    ``now`` is the current POSIX time (default: the clock); ``cap`` bounds the result.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    if _DELTA_SECONDS.fullmatch(text):
        seconds = float(text)
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = max(0.0, when.timestamp() - (time.time() if now is None else now))
    if not math.isfinite(seconds):
        return None
    return seconds if cap is None else min(seconds, cap)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently to try (the module docstring has the rules).

    ``max_attempts`` None: only ``deadline_s`` ends the tries (then it is required).
    ``retry_after_max_s`` None: the same cap as ``backoff_max_s``. ``timeout_s`` is each
    request's own time limit, for the caller's HTTP client. Raises ValueError when a value
    is out of range.
    """

    max_attempts: int | None = 6
    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float | None = None
    jitter: float = 0.0
    deadline_s: float | None = None
    timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts is None and self.deadline_s is None:
            raise ValueError("a retry policy without max_attempts needs deadline_s")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        for name in ("backoff_s", "jitter"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {getattr(self, name)}")
        for name in ("backoff_max_s", "retry_after_max_s", "deadline_s"):  # caps: inf is no cap
            v = getattr(self, name)
            if v is not None and not v >= 0:
                raise ValueError(f"{name} must be a number >= 0, got {v}")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be a finite number > 0, got {self.timeout_s}")

    def backoff(self, failures: int, rand: Callable[[], float] = random.random) -> float:
        """The exponential wait after ``failures`` (≥ 1) failures, jittered, capped."""
        exponent = min(max(failures - 1, 0), 64)  # 2^64 · anything already exceeds any cap
        wait = self.backoff_s * 2.0**exponent
        if self.jitter:
            wait *= 1 + self.jitter * rand()
        return min(wait, self.backoff_max_s)

    def wait_s(self, failures: int, retry_after_s: float | None = None,
               rand: Callable[[], float] = random.random) -> float:
        """The wait before the next try: :meth:`backoff`, raised to the server's ``Retry-After``
        (itself capped at ``retry_after_max_s``)."""
        wait = self.backoff(failures, rand)
        if retry_after_s is not None:
            cap = self.backoff_max_s if self.retry_after_max_s is None else self.retry_after_max_s
            wait = max(wait, min(max(retry_after_s, 0.0), cap))
        return wait


class TryAgain(Exception):
    """Raised by an attempt: a transient failure (``reason`` says which) worth another try.

    A signal between an attempt and :func:`retry`, never seen outside it: ``status`` is the
    HTTP status when there was an answer, ``retry_after_s`` the server's ``Retry-After``.
    """

    def __init__(self, reason: str, retry_after_s: float | None = None, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s
        self.status = status


class GaveUp(Exception):
    """:func:`retry` ran out of tries or time; ``last`` is the final failure, ``attempts`` the
    tries made. Callers turn it into their own error (it is not a DrsearchError)."""

    def __init__(self, last: TryAgain, attempts: int) -> None:
        super().__init__(f"gave up after {attempts} attempt(s): {last.reason}")
        self.last = last
        self.attempts = attempts


def transient_answer(status: int, headers: Mapping[str, str], detail: str = "") -> TryAgain | None:
    """A :class:`TryAgain` for an HTTP answer worth another try (:data:`RETRY_STATUSES`, with
    its ``Retry-After``), else None. ``headers`` is any mapping (httpx's is case-insensitive;
    a plain dict should hold the lower-case name)."""
    if status not in RETRY_STATUSES:
        return None
    reason = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    return TryAgain(reason, parse_retry_after(headers.get("retry-after")), status)


class _Schedule:
    """The stop-or-wait decision shared by the sync and the async loop."""

    def __init__(self, policy: RetryPolicy, clock: Callable[[], float], rand: Callable[[], float]) -> None:
        self.policy, self.clock, self.rand = policy, clock, rand
        self.start = clock()

    def wait_after(self, attempt: int, failure: TryAgain) -> float:
        """Seconds to wait after failed try ``attempt``; raises GaveUp when no try is left."""
        p = self.policy
        if p.max_attempts is not None and attempt >= p.max_attempts:
            raise GaveUp(failure, attempt)
        wait = p.wait_s(attempt, failure.retry_after_s, self.rand)
        if p.deadline_s is not None and self.clock() + wait - self.start > p.deadline_s:
            raise GaveUp(failure, attempt)
        return wait


def retry(call: Callable[[int], T], policy: RetryPolicy, *, sleep: Callable[[float], object] = time.sleep,
          clock: Callable[[], float] = time.monotonic, rand: Callable[[], float] = random.random) -> T:
    """``call(attempt)`` (attempt 1, 2, …) until it returns, retrying each :class:`TryAgain`
    after :meth:`RetryPolicy.wait_s`. Raises GaveUp when tries or time run out; any other
    exception ``call`` raises passes through at once."""
    schedule = _Schedule(policy, clock, rand)
    attempt = 1
    while True:
        try:
            return call(attempt)
        except TryAgain as failure:
            sleep(schedule.wait_after(attempt, failure))
        attempt += 1


async def retry_async(call: Callable[[int], Awaitable[T]], policy: RetryPolicy, *,
                      sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
                      clock: Callable[[], float] = time.monotonic,
                      rand: Callable[[], float] = random.random) -> T:
    """:func:`retry` for a coroutine: the same schedule, waiting with ``await sleep``."""
    schedule = _Schedule(policy, clock, rand)
    attempt = 1
    while True:
        try:
            return await call(attempt)
        except TryAgain as failure:
            await sleep(schedule.wait_after(attempt, failure))
        attempt += 1


__all__ = ["RETRY_STATUSES", "GaveUp", "RetryPolicy", "TryAgain", "parse_retry_after", "retry", "retry_async",
           "transient_answer"]
