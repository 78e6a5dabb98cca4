"""drsearch.contract.retry: the one Retry-After parser, the policy and the retry loop, on a fake clock."""

from __future__ import annotations

import asyncio
from calendar import timegm
from collections.abc import Callable

import pytest

from drsearch.contract.retry import (
    RETRY_STATUSES,
    GaveUp,
    RetryPolicy,
    TryAgain,
    parse_retry_after,
    retry,
    retry_async,
    transient_answer,
)

NOW = float(timegm((1994, 11, 6, 8, 49, 7)))  # 30 s before RFC 9110's example date


# -- the parser ------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["Sun, 06 Nov 1994 08:49:37 GMT",   # IMF-fixdate
                                   "Sunday, 06-Nov-94 08:49:37 GMT",  # obsolete RFC 850
                                   "Sun Nov  6 08:49:37 1994"])        # asctime (no zone: UTC)
def test_http_dates_in_all_three_formats(value: str) -> None:
    assert parse_retry_after(value, now=NOW) == 30.0


def test_delta_seconds() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 120 ") == 120.0
    assert parse_retry_after("0") == 0.0
    assert parse_retry_after("1.5") == 1.5  # not RFC, but some servers send it


def test_a_date_in_the_past_is_zero_and_a_zone_offset_counts() -> None:
    assert parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now=NOW) == 0.0
    assert parse_retry_after("Sun, 06 Nov 1994 10:49:37 +0200", now=NOW) == 30.0


@pytest.mark.parametrize("value", [None, "", "   ", "soon", "-5", "-0.5", "+3", "1e3", "inf", "nan", "7s",
                                   "0x10", "Sun, 32 Nov 1994 08:49:37 GMT", "Funday, 06 Nov 1994"])
def test_absent_negative_or_garbage_is_none(value: str | None) -> None:
    assert parse_retry_after(value, now=NOW) is None


def test_huge_values_are_capped() -> None:
    huge = "9" * 400  # float() of this is inf: refused, not waited on forever
    assert parse_retry_after(huge) is None
    assert parse_retry_after("99999999999") == 99999999999.0
    assert parse_retry_after("99999999999", cap=60) == 60.0
    assert parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now=NOW, cap=60) == 60.0
    assert parse_retry_after("5", cap=60) == 5.0


# -- the policy ------------------------------------------------------------------------------

def test_backoff_doubles_up_to_its_cap_with_jitter_from_the_given_random() -> None:
    p = RetryPolicy(backoff_s=0.5, backoff_max_s=3)
    assert [p.backoff(n) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert p.backoff(10_000) == 3.0  # no overflow
    jittered = RetryPolicy(backoff_s=1, backoff_max_s=100, jitter=0.25)
    assert jittered.backoff(2, rand=lambda: 0.5) == 2.25


def test_retry_after_is_a_floor_capped_by_retry_after_max_s() -> None:
    p = RetryPolicy(backoff_s=1, backoff_max_s=4)
    assert p.wait_s(1, 0.0) == 1.0    # a server's 0 does not make us hurry
    assert p.wait_s(1, 3.0) == 3.0
    assert p.wait_s(1, 600.0) == 4.0  # capped: retry_after_max_s defaults to backoff_max_s
    assert RetryPolicy(backoff_s=1, backoff_max_s=4, retry_after_max_s=60).wait_s(1, 600.0) == 60.0


@pytest.mark.parametrize("bad", [dict(max_attempts=0), dict(max_attempts=None), dict(backoff_s=-1),
                                 dict(backoff_s=float("nan")), dict(jitter=float("inf")),
                                 dict(backoff_max_s=-1), dict(deadline_s=float("nan")), dict(timeout_s=0)])
def test_out_of_range_policies_are_refused(bad: dict[str, float | None]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**bad)  # type: ignore[arg-type]


# -- the loop --------------------------------------------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s

    def __call__(self) -> float:
        return self.now


def server(answers: list[int | Exception], headers: dict[int, dict[str, str]] | None = None
           ) -> tuple[Callable[[int], str], list[int]]:
    """An attempt that plays ``answers`` (a status, or a network error) as an HTTP caller would."""
    tries: list[int] = []

    def attempt(n: int) -> str:
        tries.append(n)
        answer = answers[min(n, len(answers)) - 1]
        if isinstance(answer, Exception):
            raise TryAgain(f"{answer.__class__.__name__}: {answer}")
        again = transient_answer(answer, (headers or {}).get(answer, {}))
        if again is not None:
            raise again
        return f"final {answer}"

    return attempt, tries


def test_429_5xx_and_connection_errors_are_retried_with_backoff() -> None:
    clock = FakeClock()
    attempt, tries = server([ConnectionRefusedError("refused"), 429, 500, 503, 502, 200])
    policy = RetryPolicy(max_attempts=6, backoff_s=1, backoff_max_s=8)
    assert retry(attempt, policy, sleep=clock.sleep, clock=clock) == "final 200"
    assert tries == [1, 2, 3, 4, 5, 6] and clock.sleeps == [1, 2, 4, 8, 8]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 422, 200, 204, 301])
def test_other_answers_are_final_at_once(status: int) -> None:
    clock = FakeClock()
    attempt, tries = server([status])
    assert retry(attempt, RetryPolicy(), sleep=clock.sleep, clock=clock) == f"final {status}"
    assert tries == [1] and clock.sleeps == []


def test_the_retried_statuses() -> None:
    assert {408, 429, 500, 502, 503, 504, 599} <= RETRY_STATUSES
    assert not {200, 400, 404, 499, 600} & RETRY_STATUSES


def test_retry_after_is_honoured_and_capped() -> None:
    clock = FakeClock()
    attempt, _ = server([429, 503, 429, 200], {429: {"retry-after": "7"}, 503: {"retry-after": "3600"}})
    policy = RetryPolicy(max_attempts=4, backoff_s=1, backoff_max_s=8, retry_after_max_s=60)
    assert retry(attempt, policy, sleep=clock.sleep, clock=clock) == "final 200"
    assert clock.sleeps == [7.0, 60.0, 7.0]


def test_giving_up_names_the_last_failure_and_the_tries() -> None:
    clock = FakeClock()
    attempt, tries = server([500, 503])
    with pytest.raises(GaveUp) as e:
        retry(attempt, RetryPolicy(max_attempts=3, backoff_s=0.5), sleep=clock.sleep, clock=clock)
    assert e.value.attempts == 3 and e.value.last.status == 503 and e.value.last.reason == "HTTP 503"
    assert tries == [1, 2, 3] and clock.sleeps == [0.5, 1.0]


def test_the_deadline_stops_before_a_wait_that_would_pass_it() -> None:
    clock = FakeClock()
    attempt, tries = server([503])
    policy = RetryPolicy(max_attempts=None, backoff_s=4, backoff_max_s=4, deadline_s=10)
    with pytest.raises(GaveUp) as e:
        retry(attempt, policy, sleep=clock.sleep, clock=clock)
    assert tries == [1, 2, 3] and clock.sleeps == [4, 4] and e.value.attempts == 3  # a 4th would start at 12


def test_a_retry_after_beyond_the_deadline_gives_up_at_once() -> None:
    clock = FakeClock()
    attempt, tries = server([429], {429: {"retry-after": "30"}})
    policy = RetryPolicy(backoff_s=1, retry_after_max_s=60, deadline_s=10)
    with pytest.raises(GaveUp):
        retry(attempt, policy, sleep=clock.sleep, clock=clock)
    assert tries == [1] and clock.sleeps == []


def test_any_other_exception_passes_through_untried() -> None:
    calls: list[int] = []

    def attempt(n: int) -> str:
        calls.append(n)
        raise KeyError("not transient")

    with pytest.raises(KeyError):
        retry(attempt, RetryPolicy(), sleep=lambda s: None)
    assert calls == [1]


def test_the_async_loop_follows_the_same_schedule() -> None:
    clock = FakeClock()
    attempt, tries = server([429, 502, 200], {429: {"retry-after": "2"}})

    async def call(n: int) -> str:
        return attempt(n)

    async def sleep(s: float) -> None:
        clock.sleep(s)

    policy = RetryPolicy(backoff_s=0.5, backoff_max_s=8)
    assert asyncio.run(retry_async(call, policy, sleep=sleep, clock=clock)) == "final 200"
    assert tries == [1, 2, 3] and clock.sleeps == [2.0, 1.0]
