"""The request contract on its own: limits, the number rule, the error body, the tool contract."""

from __future__ import annotations

import json
from typing import Any

import pytest

from drsearch.contract import (
    MAX_JSON_INT,
    InvalidKError,
    InvalidQueryError,
    InvalidRequestError,
    Limits,
    OpenRequest,
    SearchRequest,
    canonical_bytes,
    canonical_json,
    error_body,
    hit_passage,
    json_integer,
    number_from_text,
    parse_open,
    parse_search,
    strict_parameters,
    tool_arguments,
)
from drsearch.contract.request import search_parameters


@pytest.mark.parametrize(("value", "expected"), [
    (5, 5), (5.0, 5), (1e1, 10), (-0.0, 0), (10**30, 10**30),
    (5.5, None), ("5", None), (True, None), (False, None), (None, None), (float("nan"), None),
    (float("inf"), None), ([5], None),
])
def test_the_integer_rule(value: object, expected: int | None) -> None:
    assert json_integer(value) == expected


@pytest.mark.parametrize(("text", "value"), [
    ("5", 5), ("5.0", 5.0), ("1e1", 10.0), ("true", True), ("+5", "+5"), ("5_0", "5_0"), ("0x5", "0x5"),
    ("ten", "ten"), ("NaN", "NaN"), ("-Infinity", "-Infinity"),
])
def test_option_text_is_read_as_the_json_a_body_would_carry(text: str, value: object) -> None:
    got = number_from_text(text)
    assert got == value and type(got) is type(value)


def test_parse_search_fills_the_default_k_and_returns_a_frozen_request() -> None:
    limits = Limits(max_k=20, default_k=7)
    assert parse_search({"query": "flow"}, limits) == SearchRequest("flow", 7)
    assert parse_search({"query": "flow", "k": 20.0}, limits) == SearchRequest("flow", 20)
    with pytest.raises(AttributeError):
        parse_search({"query": "flow"}).k = 3  # type: ignore[misc]
    with pytest.raises(InvalidKError, match=r"^k must be an integer in 1\.\.20, got 21$"):
        parse_search({"query": "flow", "k": 21}, limits)


def test_limits_bound_the_query() -> None:
    limits = Limits(max_query_chars=10)
    assert parse_search({"query": "x" * 10}, limits).query == "x" * 10
    with pytest.raises(InvalidQueryError, match=r"^query is 11 characters long; the limit is 10$"):
        parse_search({"query": "x" * 11}, limits)


def test_unknown_fields_rejected_or_ignored() -> None:
    with pytest.raises(InvalidRequestError, match=r"^unknown field 'a', 'b', 'c' and 1 more$"):
        parse_search({"query": "q", "d": 1, "c": 1, "b": 1, "a": 1})
    assert parse_search({"query": "q", "top_k": 3}, Limits(unknown_fields="ignore")) == SearchRequest("q", 10)


def test_parse_open() -> None:
    assert parse_open({"docid": "a"}) == OpenRequest("a", None, 0, None)
    assert parse_open({"url": "u", "offset": 3.0, "length": None}) == OpenRequest(None, "u", 3, None)
    assert parse_open({"docid": "a", "offset": MAX_JSON_INT, "length": MAX_JSON_INT}).offset == MAX_JSON_INT
    with pytest.raises(InvalidRequestError, match=r"^unknown field 'length'$"):
        parse_open({"docid": "a", "length": 5}, fields=("docid", "url", "offset"))
    with pytest.raises(InvalidRequestError, match=r"^docid must be a string, got null$"):
        parse_open({"docid": None, "url": "u"})


@pytest.mark.parametrize("bad", [
    {"max_k": 0}, {"max_k": 10_001}, {"default_k": 0}, {"max_k": 5, "default_k": 6},
    {"max_query_chars": 0}, {"max_query_chars": 40_000}, {"max_query_terms": 2000},
    {"unknown_fields": "maybe"},
])
def test_inconsistent_limits_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Limits(**bad)


def test_the_shown_value_is_json_and_cut() -> None:
    with pytest.raises(InvalidKError) as e:
        parse_search({"query": "q", "k": "x" * 100})
    assert e.value.message == 'k must be an integer in 1..100, got "' + "x" * 38 + "…"


def test_error_body_is_capped_and_canonical() -> None:
    body = error_body("invalid_query", "m" * 600)
    assert json.loads(body) == {"error": {"message": "m" * 499 + "…", "type": "invalid_query"}}
    assert body == canonical_bytes(json.loads(body))


def test_canonical_json() -> None:
    assert canonical_json({"b": [1, 2.5], "a": "é"}) == '{"a":"é","b":[1,2.5]}'
    with pytest.raises(ValueError):
        canonical_json(float("nan"))


def test_tool_contract() -> None:
    schema = strict_parameters(search_parameters(Limits(max_k=20, default_k=5)))
    assert schema["required"] == ["query", "k"]
    assert schema["properties"]["k"] == {"type": ["integer", "null"], "minimum": 1, "maximum": 20,
                                         "description": "results to return (default 5)"}
    assert tool_arguments({"query": "q", "k": None}) == {"query": "q"}
    assert tool_arguments(["q"]) == ["q"]  # refused by the parser, with its message
    assert hit_passage({"chunk": {"text": " a \n b "}, "snippet": "s"}) == "a b"
    assert hit_passage({"snippet": "s  t"}) == "s t"


def test_the_request_mapping_is_never_mutated() -> None:
    data = {"docid": "a", "length": None, "extra": 1}
    assert parse_open(data, Limits(unknown_fields="ignore")) == OpenRequest("a", None, 0, None)
    assert data == {"docid": "a", "length": None, "extra": 1}
    with pytest.raises(InvalidRequestError, match=r"^offset must be an integer in 0\.\.9007199254740991, got null$"):
        parse_open({"docid": "a", "offset": None})
