"""HttpSearcher's retries go through drsearch.contract.retry: 429/5xx and network errors are
tried again (waiting at least a Retry-After), a 4xx is the answer."""

from __future__ import annotations

import httpx
import pytest

from drsearch.agents import HttpSearcher, SearcherError
from drsearch.contract import IDENTITY_HEADER

RESULT = {"query": "x", "k": 1, "results": []}


def searcher(answers: list[httpx.Response | Exception], sleeps: list[float], **kw: float) -> HttpSearcher:
    it = iter(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        answer = next(it)
        if isinstance(answer, Exception):
            raise answer
        return answer

    client = httpx.Client(base_url="http://search.test", transport=httpx.MockTransport(handler))
    return HttpSearcher(client, sleep=sleeps.append, **kw)  # type: ignore[arg-type]


def test_a_proxys_429_is_retried_after_its_retry_after() -> None:
    sleeps: list[float] = []
    http = searcher([httpx.Response(429, headers={"retry-after": "3"}), httpx.ConnectError("refused"),
                     httpx.Response(200, json=RESULT, headers={IDENTITY_HEADER: "d-1/none"})], sleeps,
                    attempts=3, backoff_s=0.25)
    assert http.search("x", 1).ok
    assert sleeps == [3.0, 0.5]


def test_a_4xx_is_the_answer_and_running_out_of_tries_raises() -> None:
    sleeps: list[float] = []
    refused = httpx.Response(400, json={"error": {"type": "invalid_request", "message": "bad k"}},
                             headers={IDENTITY_HEADER: "d-1/none"})
    assert not searcher([refused], sleeps).search("x", 0).ok and sleeps == []
    http = searcher([httpx.Response(503)] * 2, sleeps, attempts=2, backoff_s=0.25)
    with pytest.raises(SearcherError, match="failed after 2 attempts: HTTP 503"):
        http.search("x", 1)
    assert sleeps == [0.25]
