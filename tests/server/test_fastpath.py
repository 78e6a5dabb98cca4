"""POST /search, /open and /retrieve answered without the framework (server/fastpath.py).

The fast routes must be invisible: every request answered by them gets the status, headers
and bytes the FastAPI route gives it, errors included, and everything else still reaches
FastAPI (405, 404, the OpenAPI document).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.index import Engine
from drsearch.server import ServerSettings, create_app

from .conftest import Client

SETTINGS = ServerSettings(max_body_bytes=4096, max_query_terms=6, max_batch_queries=8,
                          max_batch_results=20, max_k=50)


def _requests(docid: str, url: str) -> list[tuple[str, str, dict[str, Any]]]:
    big = b'{"query": "' + b"x" * 5000 + b'", "k": 3}'
    return [
        ("POST", "/search", {"json": {"query": "tide pools", "k": 3}}),
        ("POST", "/search", {"json": {"query": "tide pools"}}),
        ("POST", "/search", {"json": {"query": "river delta", "k": 0}}),
        ("POST", "/search", {"json": {"query": "river delta", "k": 51}}),
        ("POST", "/search", {"json": {"query": "   ", "k": 3}}),
        ("POST", "/search", {"json": {"query": "a b c d e f g h", "k": 3}}),
        ("POST", "/search", {"json": {"query": "river", "k": 3, "extra": 1}}),
        ("POST", "/search", {"json": {"query": "river", "k": True}}),
        ("POST", "/search", {"json": ["river"]}),
        ("POST", "/search", {"content": b"{not json"}),
        ("POST", "/search", {"content": b""}),
        ("POST", "/search", {"content": b"\xff\xfe"}),
        ("POST", "/search", {"content": big}),
        ("POST", "/search", {"chunks": [big[:3000], big[3000:]]}),  # no Content-Length: counted
        ("POST", "/search", {"chunks": [b'{"query": "tide', b' pools", "k": 2}']}),
        ("POST", "/search?k=5", {"json": {"query": "river", "k": 2}}),
        ("POST", "/open", {"json": {"docid": docid}}),
        ("POST", "/open", {"json": {"docid": docid, "offset": 10, "length": 40}}),
        ("POST", "/open", {"json": {"url": url}}),
        ("POST", "/open", {"json": {"docid": "no-such-docid"}}),
        ("POST", "/open", {"json": {"docid": docid, "url": url}}),
        ("POST", "/open", {"json": {}}),
        ("POST", "/retrieve", {"json": {"queries": ["tide pools", "river delta"], "topk": 3}}),
        ("POST", "/retrieve", {"json": {"queries": ["tide pools"], "topk": 2, "return_scores": True}}),
        ("POST", "/retrieve", {"json": {"queries": ["a"] * 9, "topk": 1}}),
        ("POST", "/retrieve", {"json": {"queries": ["tide", "river"], "topk": 11}}),
        ("POST", "/retrieve", {"json": {"queries": ["tide", " "], "topk": 3}}),
        ("POST", "/retrieve", {"json": {"queries": [], "topk": 3}}),
        ("GET", "/search", {}),
        ("PUT", "/retrieve", {"json": {"queries": ["tide"], "topk": 3}}),
        ("POST", "/search/", {"json": {"query": "tide", "k": 3}}),
        ("POST", "/health", {}),
    ]


def _sendable(kwargs: dict[str, Any]) -> dict[str, Any]:
    """httpx's arguments; ``chunks``: a body streamed in those parts (chunked, no length)."""
    if "chunks" not in kwargs:
        return kwargs
    parts = kwargs["chunks"]

    async def stream() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    return {"content": stream()}


@pytest.fixture(scope="module")
def client(sample_index: Path) -> Any:
    c = Client(create_app(Engine.open(sample_index), SETTINGS))
    yield c
    c.close()


def test_every_answer_is_the_frameworks_byte_for_byte(client: Client, sample_index: Path) -> None:
    with Engine.open(sample_index) as engine:
        hit = engine.search("tide pools", 1).hits[0]
    app = client.app
    fast = app.fast
    assert fast is not None
    requests = _requests(hit.docid, hit.url)
    try:
        answers = []
        for fast_on in (True, False):
            app.fast = fast if fast_on else None
            answers.append([client.request(m, p, **_sendable(kw)) for m, p, kw in requests])
    finally:
        app.fast = fast
    statuses = set()
    for (method, path, _), a, b in zip(requests, *answers, strict=True):
        statuses.add(a.status_code)
        assert (a.status_code, a.headers.raw, a.content) == (b.status_code, b.headers.raw, b.content), \
            (method, path)
        assert a.headers["x-drsearch-identity"]
    assert {200, 404, 405, 413, 422} <= statuses


def test_posts_to_the_three_paths_never_reach_the_framework(client: Client) -> None:
    app = client.app
    client.get("/health")  # the framework's middleware stack is built on first use

    async def framework(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError(f"{scope['method']} {scope['path']} reached the framework")

    built, app.middleware_stack = app.middleware_stack, framework
    try:
        assert client.post("/search", {"query": "tide pools", "k": 2}).status_code == 200
        assert client.post("/retrieve", {"queries": ["tide pools"], "topk": 2}).status_code == 200
        assert client.post("/search", {"query": "tide", "k": 0}).status_code == 422
        assert client.post("/open", {"docid": "no-such-docid"}).status_code == 404
    finally:
        app.middleware_stack = built
    counts = client.get("/stats").json()
    assert counts  # the counters still saw them (the middleware wraps the fast routes too)


def test_the_fast_routes_are_counted(client: Client) -> None:
    before = client.get("/metrics").text
    client.post("/search", {"query": "tide pools", "k": 2})
    after = client.get("/metrics").text
    assert before != after
