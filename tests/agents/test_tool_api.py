"""The tool schemas and ``execute`` as a documented API: three dialects, strict mode, bad calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from drsearch.agents import DR256, TOOL_DIALECTS, EngineSearcher, execute, tool_schema_sha256, tool_schemas
from drsearch.contract import InvalidInputError
from drsearch.index import Engine

from ..helpers import strict_mode_problems


@pytest.fixture(scope="module")
def searcher(sample_index: Path) -> Iterator[EngineSearcher]:
    with Engine.open(sample_index) as e:
        yield EngineSearcher(e)


def _parameters(tool: dict[str, object], dialect: str) -> dict[str, object]:
    if dialect == "chat":
        return tool["function"]["parameters"]  # type: ignore[index, no-any-return]
    return tool["parameters" if dialect == "responses" else "input_schema"]  # type: ignore[return-value]


def test_the_default_is_what_runs_send_and_hash() -> None:
    # run.json records this hash; a change here would orphan every recorded run's replay cache
    assert tool_schema_sha256(DR256) == "9bf434e7af00f191b04743ff75522a644e585cfe3ef6cf1d0c3c1411e31b200b"
    assert tool_schemas() == tool_schemas(DR256) == tool_schemas(DR256, dialect="chat", strict=False)


@pytest.mark.parametrize("dialect", TOOL_DIALECTS)
def test_every_dialect_names_the_same_tools(dialect: str) -> None:
    tools = tool_schemas(dialect=dialect)
    chat = tool_schemas()
    names = [t["function"]["name"] if dialect == "chat" else t["name"] for t in tools]
    assert names == ["search", "open"]
    for tool, reference in zip(tools, chat, strict=True):
        assert _parameters(tool, dialect) == reference["function"]["parameters"]
    if dialect == "responses":
        assert all(t["type"] == "function" and t["strict"] is False for t in tools)
    if dialect == "anthropic":
        assert all(set(t) == {"name", "description", "input_schema"} for t in tools)


@pytest.mark.parametrize("dialect", TOOL_DIALECTS)
def test_strict_schemas_are_accepted_by_strict_mode(dialect: str) -> None:
    for tool in tool_schemas(dialect=dialect, strict=True):
        params = _parameters(tool, dialect)
        assert strict_mode_problems(params) == []
        flag = tool["function"]["strict"] if dialect == "chat" else tool["strict"]
        assert flag is True
    # and the non-strict ones are not (optional arguments are left out of `required` there)
    assert strict_mode_problems(tool_schemas()[0]["function"]["parameters"]) != []


def test_strict_calls_with_nulls_run(searcher: EngineSearcher) -> None:
    search, open_ = (t["function"]["parameters"] for t in tool_schemas(strict=True))
    call = {"query": "antikythera mechanism", "k": None}
    jsonschema.validate(call, search)
    assert execute("search", call, searcher).text == execute("search", {"query": "antikythera mechanism"},
                                                             searcher).text
    hit = json.loads(searcher.search("antikythera mechanism", 1).body)["results"][0]
    call = {"docid": None, "url": hit["url"], "offset": None}
    jsonschema.validate(call, open_)
    result = execute("open", call, searcher)
    assert result.response.ok and result.text.startswith(f"docid: {hit['docid']}\n")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "x"}, search)  # strict: k must be sent (as null at least)


@pytest.mark.parametrize(("name", "args", "error_type", "message"), [
    # search/open: the request contract's type and message, as POST /search and /open answer
    ("search", {}, "invalid_query", "missing field 'query'"),
    ("search", {"query": 5}, "invalid_query", "query must be a string, got a number"),
    ("search", {"query": "x", "k": "5"}, "invalid_k", 'k must be an integer in 1..20, got "5"'),
    ("search", {"query": "x", "k": 21}, "invalid_k", "k must be an integer in 1..20, got 21"),
    ("search", {"query": "x", "limit": 5}, "invalid_request", "unknown field 'limit'"),
    ("open", {"docid": "a", "url": "b"}, "invalid_request", "give exactly one of docid or url"),
    ("open", {"docid": "a", "offset": -1}, "invalid_request", "offset must be an integer in 0.."),
    ("open", {"docid": "a", "length": 5}, "invalid_request", "unknown field 'length'"),
    ("search", ["x"], "invalid_request", "request must be a JSON object, got an array"),
    ("python", {"code": "1"}, "invalid_arguments", "unknown tool 'python'"),
])
def test_bad_calls_are_tool_errors(searcher: EngineSearcher, name: str, args: object, error_type: str,
                                   message: str) -> None:
    result = execute(name, args, searcher)
    assert not result.response.ok
    err = json.loads(result.text)["error"]
    assert err["type"] == error_type and message in err["message"], err
    assert json.loads(result.response.body) == json.loads(result.text)


def test_integral_floats_are_integers_as_over_http(searcher: EngineSearcher) -> None:
    """k 5.0 is the integer 5 (JSON Schema's integer), in the tools as in POST /search."""
    assert execute("search", {"query": "antikythera mechanism", "k": 5.0}, searcher).text == execute(
        "search", {"query": "antikythera mechanism", "k": 5}, searcher).text
    assert execute("search", {"query": "antikythera mechanism", "k": 5.0}, searcher).response.ok


def test_oversized_query_is_the_engines_error(searcher: EngineSearcher) -> None:
    result = execute("search", {"query": "x" * 40_000}, searcher)
    assert not result.response.ok and json.loads(result.text)["error"]["type"] == "invalid_query"


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="unknown tool dialect 'gemini'"):
        tool_schemas(dialect="gemini")


def test_the_tool_error_is_the_capped_error_body() -> None:
    """It used to be uncapped: a hostile 100 KB message went to the model whole."""
    from drsearch.agents.tools import tool_error
    from drsearch.contract import error_body

    text = tool_error("malformed_tool_call", "x" * 100_000)
    assert text.encode() == error_body("malformed_tool_call", "x" * 100_000)
    assert len(json.loads(text)["error"]["message"]) == 500
