"""One request contract, four doors: the same bad input gets the same error everywhere.

Each case goes through a real ``drsearch serve`` on 127.0.0.1 (``POST /search``/``/open``),
the MCP tool layer (``call_tool``), the agents' ``execute`` and the ``drsearch search`` /
``drsearch open`` commands, and must come back with the same error type and the same
message from each: HTTP 422 with it as the reason, a tool error body, exit 2 with it on
stderr. A door that cannot express an input (the CLI has no JSON string ``"5"``, the
agents' ``open`` has no ``length``) says so in the case and is skipped for it alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.agents import DR256, EngineSearcher, execute
from drsearch.contract import canonical_json
from drsearch.index import Engine
from drsearch.mcpserver import McpSettings, call_tool
from drsearch.tools.cli import main
from tests.server.test_e2e import Server, start

MAX = 9007199254740991
TOO_MANY_TERMS = " ".join(f"w{i}" for i in range(1025))

# (id, tool, arguments, error type, the whole message, doors that cannot express it)
CASES: list[tuple[str, str, dict[str, Any], str, str, set[str]]] = [
    ("k0", "search", {"query": "flow", "k": 0}, "invalid_k", "k must be an integer in 1..100, got 0", set()),
    ("k-huge", "search", {"query": "flow", "k": 10**9}, "invalid_k",
     "k must be an integer in 1..100, got 1000000000", set()),
    ("k-fraction", "search", {"query": "flow", "k": 5.5}, "invalid_k",
     "k must be an integer in 1..100, got 5.5", set()),
    ("k-string", "search", {"query": "flow", "k": "5"}, "invalid_k",
     'k must be an integer in 1..100, got "5"', {"cli"}),  # --k 5 is the number 5
    ("k-true", "search", {"query": "flow", "k": True}, "invalid_k",
     "k must be an integer in 1..100, got true", set()),
    ("k-array", "search", {"query": "flow", "k": [5]}, "invalid_k",
     "k must be an integer in 1..100, got [5]", set()),
    ("query-empty", "search", {"query": ""}, "invalid_query",
     "query is empty (no character other than whitespace)", set()),
    ("query-blank", "search", {"query": " \t "}, "invalid_query",
     "query is empty (no character other than whitespace)", set()),
    ("query-chars", "search", {"query": "x" * 32_769}, "invalid_query",
     "query is 32769 characters long; the limit is 32768", set()),
    ("query-terms", "search", {"query": TOO_MANY_TERMS}, "invalid_query",
     "query has more than 1024 distinct terms; the limit is 1024", set()),
    ("query-type", "search", {"query": 5}, "invalid_query", "query must be a string, got a number", {"cli"}),
    ("query-missing", "search", {"k": 5}, "invalid_query", "missing field 'query'", {"cli"}),
    ("search-unknown", "search", {"query": "flow", "top_k": 3}, "invalid_request", "unknown field 'top_k'",
     {"cli"}),
    ("open-both", "open", {"docid": "a", "url": "https://x.example/"}, "invalid_request",
     "give exactly one of docid or url", set()),
    ("open-neither", "open", {}, "invalid_request", "give exactly one of docid or url", set()),
    ("open-docid-type", "open", {"docid": 5}, "invalid_request", "docid must be a string, got a number",
     {"cli"}),
    ("offset-negative", "open", {"docid": "a", "offset": -1}, "invalid_request",
     f"offset must be an integer in 0..{MAX}, got -1", set()),
    ("offset-string", "open", {"docid": "a", "offset": "10"}, "invalid_request",
     f'offset must be an integer in 0..{MAX}, got "10"', {"cli"}),
    ("offset-fraction", "open", {"docid": "a", "offset": 2.5}, "invalid_request",
     f"offset must be an integer in 0..{MAX}, got 2.5", set()),
    ("length0", "open", {"docid": "a", "length": 0}, "invalid_request",
     f"length must be an integer in 1..{MAX}, got 0", {"agents"}),  # the agents' page size is the preset's
    ("length-huge", "open", {"docid": "a", "length": 10**30}, "invalid_request",
     f"length must be an integer in 1..{MAX}, got 1000000000000000000000000000000", {"agents"}),
    ("length-true", "open", {"docid": "a", "length": True}, "invalid_request",
     f"length must be an integer in 1..{MAX}, got true", {"agents"}),
]
IDS = [c[0] for c in CASES]


@pytest.fixture(scope="module")
def served(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(tmp_path_factory.mktemp("contract"), "--database", str(sample_index), workers=1)
    yield server
    assert server.stop() == 0, server.log.read_text()[-2000:]


@pytest.fixture(scope="module")
def searcher(sample_index: Path) -> Iterator[EngineSearcher]:
    with Engine.open(sample_index) as engine:
        yield EngineSearcher(engine)


def _cli_argv(index: Path, tool: str, args: dict[str, Any]) -> list[str]:
    """The command line standing for ``args``: options as the JSON text of their values."""
    argv = [tool, "--database", str(index)]
    for key, value in args.items():
        if key != "query":
            argv += [f"--{key}", value if isinstance(value, str) and key in ("docid", "url")
                     else canonical_json(value)]
    return [*argv, args["query"]] if "query" in args else argv


@pytest.mark.parametrize(("case", "tool", "args", "error_type", "message", "cannot"), CASES, ids=IDS)
def test_every_door_refuses_alike(case: str, tool: str, args: dict[str, Any], error_type: str, message: str,
                                  cannot: set[str], served: Server, searcher: EngineSearcher, sample_index: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    r = httpx.post(f"{served.base}/{tool}", content=json.dumps(args).encode(), timeout=30)
    assert (r.status_code, r.json()) == (422, {"error": {"message": message, "type": error_type}}), r.text

    mcp = call_tool(tool, args, searcher, McpSettings(k=10))
    assert mcp.is_error and json.loads(mcp.text) == r.json()

    if "agents" not in cannot:
        result = execute(tool, args, searcher, DR256.model_copy(update={"search_k_max": 100}))
        assert not result.response.ok and json.loads(result.text) == r.json()
        assert result.response.body == r.content  # the same bytes: one encoder, one error body

    if "cli" not in cannot:
        capsys.readouterr()
        code = main(_cli_argv(sample_index, tool, args))
        out, err = capsys.readouterr()
        assert (code, out, err) == (2, "", f"drsearch: error: {message}\n")


def test_integral_numbers_are_integers_at_every_door(served: Server, searcher: EngineSearcher,
                                                      sample_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The one number rule: k 5.0 (and 5e0) is the integer 5 over HTTP, MCP, the agents and the CLI."""
    want = httpx.post(f"{served.base}/search", json={"query": "flow", "k": 5}).content
    assert httpx.post(f"{served.base}/search", content=b'{"query": "flow", "k": 5.0}').content == want
    assert [h["docid"] for h in json.loads(call_tool("search", {"query": "flow", "k": 5.0}, searcher,
                                                      McpSettings()).text)] == [
        h["docid"] for h in json.loads(want)["results"]]
    assert execute("search", {"query": "flow", "k": 5.0}, searcher).response.body == want
    capsys.readouterr()
    assert main(["search", "--database", str(sample_index), "--json", "--k", "5e0", "flow"]) == 0
    assert capsys.readouterr().out == want.decode() + "\n"
