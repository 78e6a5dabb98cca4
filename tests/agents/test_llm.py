"""ChatClient over httpx.MockTransport: bounded retries of transient errors only."""

from __future__ import annotations

import json

import httpx
import pytest

from drsearch.agents import ChatClient, LLMError, RetryPolicy

OK = {"choices": [{"finish_reason": "stop", "index": 0, "message": {"content": "hi", "role": "assistant"}}]}


def client(statuses: list[int], sleeps: list[float], **policy: float) -> tuple[ChatClient, list[bytes]]:
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        status = statuses[min(len(seen), len(statuses)) - 1]
        if status == 0:
            raise httpx.ConnectError("refused")
        if status == -1:
            raise httpx.ReadTimeout("no answer in time")
        headers = {"retry-after": "2"} if status == 429 else {}
        return httpx.Response(status, json=OK if status == 200 else {"error": "x"}, headers=headers)

    http = httpx.Client(base_url="http://llm.test/v1", transport=httpx.MockTransport(handler))
    return ChatClient(http, RetryPolicy(**policy), sleep=sleeps.append), seen


def test_transient_errors_are_retried_with_backoff() -> None:
    sleeps: list[float] = []
    chat, seen = client([0, 429, 503, 200], sleeps, max_attempts=5, backoff_s=0.5, backoff_max_s=10)
    raw, attempts = chat.complete({"model": "m", "seed": 1})
    assert json.loads(raw) == OK and attempts == 4
    assert sleeps == [0.5, 2.0, 2.0]  # 0.5·2^n, raised to retry-after (2 s) on the 429
    assert len(set(seen)) == 1 and json.loads(seen[0]) == {"model": "m", "seed": 1}


def test_a_retry_after_http_date_is_honoured() -> None:
    """Retry-After as an HTTP date (RFC 9110 §10.2.3), not only as seconds: the one parser
    (drsearch.contract.retry) serves the model client too."""
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    when = format_datetime(datetime.now(UTC) + timedelta(seconds=100), usegmt=True)
    answers = iter([httpx.Response(503, headers={"retry-after": when}), httpx.Response(200, json=OK)])
    http = httpx.Client(base_url="http://llm.test/v1", transport=httpx.MockTransport(lambda r: next(answers)))
    sleeps: list[float] = []
    chat = ChatClient(http, RetryPolicy(max_attempts=2, backoff_s=0.5, backoff_max_s=1000), sleep=sleeps.append)
    assert chat.complete({})[1] == 2
    assert len(sleeps) == 1 and 90 < sleeps[0] <= 100


def test_timeouts_are_retried_then_give_up() -> None:
    sleeps: list[float] = []
    chat, seen = client([-1, 502, -1], sleeps, max_attempts=3, backoff_s=0.25)
    with pytest.raises(LLMError, match="gave up after 3 attempts: ReadTimeout: no answer in time"):
        chat.complete({})
    assert len(seen) == 3 and sleeps == [0.25, 0.5]
    chat, seen = client([-1, 200], sleeps, max_attempts=3)
    assert chat.complete({})[1] == 2


def test_retries_are_bounded() -> None:
    sleeps: list[float] = []
    chat, seen = client([500], sleeps, max_attempts=3, backoff_s=1, backoff_max_s=1.5)
    with pytest.raises(LLMError, match="gave up after 3 attempts") as e:
        chat.complete({})
    assert len(seen) == 3 and sleeps == [1.0, 1.5] and e.value.attempts == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    chat, seen = client([status], [], max_attempts=5)
    with pytest.raises(LLMError, match=f"HTTP {status}"):
        chat.complete({})
    assert len(seen) == 1


def test_a_body_that_is_not_a_chat_completion_is_an_error() -> None:
    http = httpx.Client(base_url="http://llm.test/v1",
                        transport=httpx.MockTransport(lambda r: httpx.Response(200, json={"choices": []})))
    with pytest.raises(LLMError, match="not a chat completion"):
        ChatClient(http, RetryPolicy(max_attempts=2)).complete({})


@pytest.mark.parametrize("statuses,infrastructure", [
    ([400], False), ([422], False),  # the endpoint refused this request: the model's outcome
    ([401], True), ([403], True), ([404], True),  # a wrong key, URL or model name
    ([503], True), ([0], True), ([429], True),  # unreachable or overloaded past the retries
])
def test_failures_are_told_apart(statuses: list[int], infrastructure: bool) -> None:
    from drsearch.agents import EndpointError, InfrastructureError

    chat, _ = client(statuses, [], max_attempts=2)
    with pytest.raises(LLMError) as e:
        chat.complete({})
    assert isinstance(e.value, EndpointError) is infrastructure
    assert isinstance(e.value, InfrastructureError) is infrastructure
