"""Every malformed request gets a 4xx JSON error with a reason; nothing gets a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.contract import QueryTimeoutError
from drsearch.index import Engine, gil_poll_ns
from drsearch.server import ServerSettings, create_app

from .conftest import Client, error_of, make_client

MISSING = object()

SEARCH_CASES: list[tuple[Any, str, str]] = [
    ({"k": 5}, "invalid_query", "missing field 'query'"),
    ({"query": 5}, "invalid_query", "query must be a string, got a number"),
    ({"query": ["flow"]}, "invalid_query", "query must be a string, got an array"),
    ({"query": None}, "invalid_query", "query must be a string, got null"),
    ({"query": ""}, "invalid_query", "query is empty"),
    ({"query": "   "}, "invalid_query", "query is empty"),
    ({"query": "\t\n\u3000"}, "invalid_query", "query is empty"),
    ({"query": "x" * 32_769}, "invalid_query", "the limit is 32768"),
    ({"query": "flow", "k": 0}, "invalid_k", "k must be an integer in 1..100, got 0"),
    ({"query": "flow", "k": 101}, "invalid_k", "k must be an integer in 1..100, got 101"),
    ({"query": "flow", "k": -3}, "invalid_k", "got -3"),
    ({"query": "flow", "k": 10**30}, "invalid_k", "got 1000000000000000000000000000000"),
    ({"query": "flow", "k": "5"}, "invalid_k", 'got "5"'),
    ({"query": "flow", "k": 5.5}, "invalid_k", "got 5.5"),
    ({"query": "flow", "k": 1e3}, "invalid_k", "k must be an integer in 1..100"),
    ({"query": "flow", "k": 1e300}, "invalid_k", "got 1e+300"),
    ({"query": "flow", "k": True}, "invalid_k", "got true"),
    ({"query": "flow", "k": None}, "invalid_k", "got null"),
    ({"query": "flow", "top_k": 3}, "invalid_request", "unknown field 'top_k'"),
    ([], "invalid_request", "request must be a JSON object, got an array"),
    ("flow", "invalid_request", "JSON object, got a string"),
    (42, "invalid_request", "JSON object, got a number"),
    (None, "invalid_request", "JSON object, got null"),
]

OPEN_CASES: list[tuple[Any, str, str]] = [
    ({}, "invalid_request", "exactly one of docid or url"),
    ({"docid": "a", "url": "https://x.example/"}, "invalid_request", "exactly one of docid or url"),
    ({"docid": None, "url": None}, "invalid_request", "docid must be a string, got null"),
    ({"docid": None, "url": "https://x.example/"}, "invalid_request", "docid must be a string, got null"),
    ({"docid": 5}, "invalid_request", "docid must be a string, got a number"),
    ({"url": ["https://x.example/"]}, "invalid_request", "url must be a string, got an array"),
    ({"docid": "a", "offset": -1}, "invalid_request", "offset must be an integer in 0..9007199254740991, got -1"),
    ({"docid": "a", "offset": "10"}, "invalid_request", 'offset must be an integer in 0..9007199254740991, got "10"'),
    ({"docid": "a", "offset": 2**53}, "invalid_request", "got 9007199254740992"),
    ({"docid": "a", "length": 0}, "invalid_request", "length must be an integer in 1..9007199254740991, got 0"),
    ({"docid": "a", "length": 2.5}, "invalid_request", "got 2.5"),
    ({"docid": "a", "length": True}, "invalid_request", "got true"),
    ({"docid": "a", "length": 10**30}, "invalid_request", "length must be an integer in 1..9007199254740991"),
    ({"docid": "a", "extra": 1}, "invalid_request", "unknown field 'extra'"),
    ([{"docid": "a"}], "invalid_request", "JSON object, got an array"),
]

RAW_CASES: list[tuple[bytes, str]] = [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b"{", "not valid JSON"),
    (b'{"query": "flow",}', "not valid JSON"),
    (b'{"query": "flow"} trailing', "not valid JSON"),
    (b"{'query': 'flow'}", "not valid JSON"),
    (b'{"query": "\xff\xfe flow"}', "not valid UTF-8"),
    (b"\xef\xbb\xbf{\"query\": \"bom\"}", "not valid JSON"),
    (b'{"query": "\\ud800"}', "not valid JSON"),
    (b'{"query": "\\udc00 tail"}', "not valid JSON"),
    (b'{"query": "\\x41"}', "not valid JSON"),
    (b"\x00\x00\x00", "not valid JSON"),
]


@pytest.mark.parametrize(("body", "etype", "reason"), SEARCH_CASES)
def test_bad_search_bodies(client: Client, body: Any, etype: str, reason: str) -> None:
    status, got_type, message = error_of(client.post("/search", content=json.dumps(body)))
    assert (status, got_type) == (422, etype) and reason in message, message


@pytest.mark.parametrize(("body", "etype", "reason"), OPEN_CASES)
def test_bad_open_bodies(client: Client, body: Any, etype: str, reason: str) -> None:
    status, got_type, message = error_of(client.post("/open", content=json.dumps(body)))
    assert (status, got_type) == (422, etype) and reason in message, message


@pytest.mark.parametrize("path", ["/search", "/open"])
@pytest.mark.parametrize(("raw", "reason"), RAW_CASES)
def test_bodies_that_are_not_json(client: Client, path: str, raw: bytes, reason: str) -> None:
    status, etype, message = error_of(client.post(path, content=raw))
    assert (status, etype) == (422, "invalid_json") and reason in message, message


def test_body_over_the_limit_is_413_declared_or_chunked(sample_index: Path) -> None:
    c = make_client(sample_index, settings=ServerSettings(max_body_bytes=4096))
    try:
        big = json.dumps({"query": "flow " * 2000}).encode()
        status, etype, message = error_of(c.post("/search", content=big))
        assert (status, etype) == (413, "payload_too_large") and "4096" in message

        async def chunks() -> Any:  # no Content-Length: counted as it streams in
            for _ in range(10):
                yield b" " * 1000
        status, etype, _ = error_of(c.post("/search", content=chunks()))
        assert (status, etype) == (413, "payload_too_large")
        status, etype, _ = error_of(c.post("/open", content=big))
        assert status == 413
        assert c.post("/search", content=b'{"query": "flow"}' + b" " * 4000).status_code == 200
    finally:
        c.close()


def test_default_limit_admits_a_max_length_query_of_wide_characters(client: Client) -> None:
    r = client.post("/search", {"query": "🚀" * 32_768, "k": 5})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(("method", "path", "status", "etype"), [
    ("GET", "/search", 405, "method_not_allowed"),
    ("PUT", "/open", 405, "method_not_allowed"),
    ("POST", "/health", 405, "method_not_allowed"),
    ("DELETE", "/stats", 405, "method_not_allowed"),
    ("GET", "/nope", 404, "no_such_endpoint"),
    ("POST", "/search/", 404, "no_such_endpoint"),
    ("GET", "/%ff%fe", 404, "no_such_endpoint"),
])
def test_routing_errors_have_the_same_shape(client: Client, method: str, path: str, status: int,
                                            etype: str) -> None:
    assert error_of(client.request(method, path))[:2] == (status, etype)


def test_nan_and_infinity_are_not_numbers_we_take(client: Client) -> None:
    for raw in (b'{"query": NaN}', b'{"query": "flow", "k": NaN}', b'{"query": "flow", "k": Infinity}'):
        status, etype, _ = error_of(client.post("/search", content=raw))
        assert status == 422 and etype in ("invalid_json", "invalid_query", "invalid_k")


def test_integral_floats_are_integers(client: Client) -> None:
    """JSON Schema counts 5.0 as an integer, and so do we (an LLM's tool call may write it)."""
    a = client.post("/search", content=b'{"query": "flow", "k": 5.0}')
    b = client.post("/search", content=b'{"query": "flow", "k": 5}')
    assert a.status_code == 200 and a.content == b.content and a.json()["k"] == 5
    assert client.post("/search", content=b'{"query": "flow", "k": 1e1}').json()["k"] == 10


def test_content_type_is_not_required(client: Client) -> None:
    """Decision: the body is parsed as JSON whatever Content-Type says (agents' clients vary)."""
    body = b'{"query": "flow", "k": 2}'
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "application/octet-stream"):
        r = client.post("/search", content=body, headers={"content-type": ctype})
        assert r.status_code == 200 and len(r.json()["results"]) == 2


def test_unknown_fields_can_be_ignored(sample_index: Path) -> None:
    c = make_client(sample_index, settings=ServerSettings(unknown_fields="ignore"))
    try:
        r = c.post("/search", {"query": "flow", "k": 2, "top_k": 50})
        assert r.status_code == 200 and len(r.json()["results"]) == 2
        schema = c.get("/openapi.json").json()["paths"]["/search"]["post"]["requestBody"]
        assert "additionalProperties" not in schema["content"]["application/json"]["schema"]
    finally:
        c.close()


def test_max_k_setting_bounds_k_and_the_schema(sample_index: Path) -> None:
    c = make_client(sample_index, settings=ServerSettings(max_k=20))
    try:
        assert c.post("/search", {"query": "flow", "k": 20}).status_code == 200
        status, etype, message = error_of(c.post("/search", {"query": "flow", "k": 21}))
        assert (status, etype) == (422, "invalid_k") and "20" in message
        spec = c.get("/openapi.json").json()
        k = spec["paths"]["/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert k["properties"]["k"]["maximum"] == 20
    finally:
        c.close()


def test_settings_are_validated() -> None:
    for bad in ({"max_k": 0}, {"max_k": 101}, {"default_k": 50, "max_k": 20},
                {"time_limit_s": 0}, {"max_body_bytes": 10}, {"unknown_fields": "maybe"},
                {"nonsense": 1}):
        with pytest.raises(ValueError):
            ServerSettings(**bad)


def test_a_framework_validated_route_answers_in_our_error_shape(sample_index: Path) -> None:
    """Our routes validate their own bodies; one added with typed parameters still answers
    FastAPI's validation errors as ``{"error": ...}`` 422, not FastAPI's ``{"detail": ...}``."""
    with Engine.open(sample_index) as engine:
        app = create_app(engine)

        @app.get("/typed")
        async def typed(n: int) -> dict[str, int]:
            return {"n": n}

        c = Client(app)
        try:
            assert c.get("/typed", params={"n": "3"}).json() == {"n": 3}
            assert error_of(c.get("/typed", params={"n": "three"}))[:2] == (422, "invalid_request")
        finally:
            c.close()


class _Broken:
    """An engine stand-in whose search fails like a bug would."""

    def __init__(self, engine: Engine, exc: Exception) -> None:
        self._engine, self._exc = engine, exc

    def search(self, *args: Any, **kwargs: Any) -> Any:
        raise self._exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def test_last_resort_handler_answers_json_500_without_traceback(sample_index: Path) -> None:
    with Engine.open(sample_index) as engine:
        c = Client(create_app(_Broken(engine, RuntimeError("boom at /secret/path")), None))  # type: ignore[arg-type]
        try:
            status, etype, message = error_of(c.post("/search", {"query": "flow"}))
            assert (status, etype) == (500, "internal_error")
            assert "RuntimeError" in message and "/secret/path" not in message
            assert c.post("/open", {"docid": "x"}).status_code == 404  # the app keeps serving
            server = c.get("/stats").json()["server"]
            assert server["endpoints"]["search"]["server_errors"] == 1
        finally:
            c.close()


def test_query_timeout_is_503_with_retry_after(sample_index: Path) -> None:
    with Engine.open(sample_index) as engine:
        c = Client(create_app(_Broken(engine, QueryTimeoutError("query ran past its time limit")), None))  # type: ignore[arg-type]
        try:
            r = c.post("/search", {"query": "flow"})
            assert error_of(r)[:2] == (503, "query_timeout") and r.headers["retry-after"] == "1"
        finally:
            c.close()


def test_long_messages_are_cut(client: Client) -> None:
    status, etype, message = error_of(client.post("/open", {"docid": "d" * 10_000}))
    assert (status, etype) == (404, "not_found") and len(message) <= 500


def test_a_server_app_turns_the_gil_poll_off(sample_index: Path) -> None:
    """A server process's event loop holds the GIL between the engine's calls, and its cores
    are the other workers' too: the kernel's poll for the GIL is off there."""
    before = gil_poll_ns()
    try:
        gil_poll_ns(100_000)
        with Engine.open(sample_index) as engine:
            create_app(engine)
        assert gil_poll_ns() in (0, -1)  # (-1: no kernel or no poll in this build)
    finally:
        if before >= 0:
            gil_poll_ns(before)
