"""``drsearch mcp`` driven by the MCP SDK's own client: over stdio (a real subprocess) and
over streamable HTTP (127.0.0.1). Tools listed and called, blocked documents indistinguishable
from unknown ones, strict-compatible schemas, bad input answered as tool errors."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

import drsearch.mcpserver
from drsearch.contract import canonical_json as dumps
from drsearch.index import BlockList, Engine

from ..helpers import DATA, free_port, strict_mode_problems

BLOCKED_FILE = DATA / "sample/blocked_docids.txt"
BLOCKED = "d-0f7f6d2dc5dfec3e"  # a leak artifact of the sample corpus, blocked in the release
K, SNIPPET, PAGE = 3, 300, 400


def _exe() -> str:
    return shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


def _env() -> dict[str, str]:
    # the SDK starts the server with a minimal environment: pass on what imports this tree
    return {key: os.environ[key] for key in ("PYTHONPATH", "PATH", "HOME") if key in os.environ}


def _server_args(index: Path) -> list[str]:
    return ["mcp", "--database", str(index), "--blocked-docids", str(BLOCKED_FILE), "--k", str(K),
            "--snippet-chars", str(SNIPPET), "--page-chars", str(PAGE)]


def _text(result: Any) -> tuple[bool, str]:
    (block,) = result.content
    return bool(result.is_error), str(block.text)


async def exercise(client: Client) -> dict[str, Any]:
    """List the tools and call each, well and badly; every answer as (is_error, text)."""
    listed = await client.list_tools()
    out: dict[str, Any] = {"tools": [t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools]}
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "search": ("search", {"query": "video game streaming history"}),
        "search_k": ("search", {"query": "video game streaming history", "k": 7}),
        "search_null_k": ("search", {"query": "video game streaming history", "k": None}),
        "get_unknown": ("get_document", {"docid": "d-0000000000000000"}),
        "get_blocked": ("get_document", {"docid": BLOCKED}),
        "open_unknown": ("open", {"docid": "d-0000000000000000"}),
        "open_blocked": ("open", {"docid": BLOCKED}),
        # bad input: wrong types, missing arguments, oversized queries, unknown names
        "bad_k_type": ("search", {"query": "x", "k": "5"}),
        "bad_k_range": ("search", {"query": "x", "k": 101}),
        "bad_query_type": ("search", {"query": 5}),
        "missing_query": ("search", {}),
        "oversized_query": ("search", {"query": "plague " * 6000}),
        "extra_argument": ("search", {"query": "x", "limit": 3}),
        "missing_docid": ("get_document", {}),
        "bad_docid_type": ("get_document", {"docid": 7}),
        "get_bad_offset": ("get_document", {"docid": "a", "offset": -1}),
        "get_bad_length": ("get_document", {"docid": "a", "length": 0}),
        "get_url": ("get_document", {"url": "https://example.org/"}),
        "open_both": ("open", {"docid": "a", "url": "b"}),
        "open_neither": ("open", {}),
        "open_bad_offset": ("open", {"docid": "a", "offset": -1}),
        "open_bad_length": ("open", {"docid": "a", "length": 0}),
        "unknown_tool": ("python", {"code": "1"}),
    }
    for key, (name, args) in calls.items():
        out[key] = _text(await client.call_tool(name, args))
    first = json.loads(out["search"][1])[0]
    out["get_first"] = _text(await client.call_tool("get_document", {"docid": first["docid"]}))
    out["open_page"] = _text(await client.call_tool("open", {"docid": first["docid"], "offset": 10, "length": 50}))
    out["get_page"] = _text(await client.call_tool("get_document", {"docid": first["docid"], "offset": 10,
                                                                    "length": 50}))
    out["get_long"] = _text(await client.call_tool("get_document", {"docid": first["docid"], "length": 10**9}))
    out["open_long"] = _text(await client.call_tool("open", {"docid": first["docid"], "length": 10**9}))
    out["open_url"] = _text(await client.call_tool("open", {"url": first["url"], "docid": None}))
    out["after_errors"] = _text(await client.call_tool("search", {"query": "video game streaming history"}))
    return out


@pytest.fixture(scope="module")
def blocked_title(sample_index: Path) -> str:
    with Engine.open(sample_index) as e:
        return e.open_document(docid=BLOCKED).title


async def _run(client: Client, title: str) -> dict[str, Any]:
    async with client:
        return await exercise_titled(client, title)


async def exercise_titled(client: Client, title: str) -> dict[str, Any]:
    """:func:`exercise`, plus a search for the blocked page's own title."""
    answers = await exercise(client)
    answers["search_blocked_title"] = _text(await client.call_tool("search", {"query": title, "k": 100}))
    return answers


def check_answers(a: dict[str, Any], index: Path) -> None:
    """What every transport must answer (compared with the engine itself)."""
    names = [t["name"] for t in a["tools"]]
    assert names == ["search", "get_document", "open"]
    for tool in a["tools"]:
        assert strict_mode_problems(tool["inputSchema"]) == [], tool["name"]
        assert tool["description"]
    with Engine.open(index, None) as plain, Engine.open(index, _blocklist()) as engine:
        assert plain.open_document(docid=BLOCKED).docid == BLOCKED  # it exists: only the blocklist hides it
        expected = engine.search("video game streaming history", K)
        hits = json.loads(a["search"][1])
        assert a["search"][0] is False and a["search_null_k"] == a["search"] == a["after_errors"]
        assert [(h["docid"], h["score"], h["title"], h["url"]) for h in hits] == [
            (h.docid, h.score, h.title, h.url) for h in expected.hits]
        assert all(set(h) == {"docid", "score", "snippet", "title", "url"} for h in hits)
        assert [h["snippet"] for h in hits] == [h.chunk_text[:SNIPPET] for h in expected.hits]
        assert max(len(h["snippet"]) for h in hits) == SNIPPET  # the cap bites on this query
        assert len(json.loads(a["search_k"][1])) == 7
        assert BLOCKED not in [h["docid"] for h in json.loads(a["search_blocked_title"][1])]
        # blocked answers exactly as unknown
        assert a["get_blocked"] == a["get_unknown"] == (False, "null")
        assert a["open_blocked"][0] is a["open_unknown"][0] is True
        assert a["open_blocked"][1].replace(BLOCKED, "X") == a["open_unknown"][1].replace("d-0000000000000000", "X")
        assert json.loads(a["open_blocked"][1])["error"]["type"] == "not_found"
        first = engine.open_document(docid=hits[0]["docid"])
        assert len(first.text) > PAGE  # the page cap bites on this document

        def page(offset: int, length: int) -> str:
            body = first.to_dict(offset, length)
            return dumps({key: body[key] for key in ("docid", "text", "total_length", "next_offset")})

        # get_document pages as open does: at most --page-chars, by default and when asked for more
        assert a["get_first"] == a["get_long"] == (False, page(0, PAGE))
        assert json.loads(a["get_first"][1])["next_offset"] == PAGE
        assert a["get_page"] == (False, page(10, 50))
        assert a["open_page"] == (False, dumps(first.to_dict(10, 50)))  # the POST /open body
        assert a["open_url"] == a["open_long"] == (False, dumps(first.to_dict(0, PAGE)))
    expected_errors = {
        # search/open: the request contract's errors, as POST /search and POST /open answer
        "bad_k_type": ("invalid_k", 'k must be an integer in 1..100, got "5"'),
        "bad_k_range": ("invalid_k", "k must be an integer in 1..100, got 101"),
        "bad_query_type": ("invalid_query", "query must be a string, got a number"),
        "missing_query": ("invalid_query", "missing field 'query'"),
        "oversized_query": ("invalid_query", "the limit is 32768"),
        "extra_argument": ("invalid_request", "unknown field 'limit'"),
        "missing_docid": ("invalid_request", "missing field 'docid'"),
        "bad_docid_type": ("invalid_request", "docid must be a string, got a number"),
        "get_bad_offset": ("invalid_request", "offset must be an integer in 0..9007199254740991, got -1"),
        "get_bad_length": ("invalid_request", "length must be an integer in 1..9007199254740991, got 0"),
        "get_url": ("invalid_request", "unknown field 'url'"),
        "open_both": ("invalid_request", "give exactly one of docid or url"),
        "open_neither": ("invalid_request", "give exactly one of docid or url"),
        "open_bad_offset": ("invalid_request", "offset must be an integer in 0..9007199254740991, got -1"),
        "open_bad_length": ("invalid_request", "length must be an integer in 1..9007199254740991, got 0"),
        "unknown_tool": ("unknown_tool", "unknown tool 'python'"),
    }
    for key, (error_type, message) in expected_errors.items():
        is_error, text = a[key]
        err = json.loads(text)["error"]
        assert is_error and err["type"] == error_type and message in err["message"], (key, text)


def _blocklist() -> BlockList:
    return BlockList.from_file(BLOCKED_FILE)


def test_public_api() -> None:
    assert set(drsearch.mcpserver.__all__) == {
        "SEARCH_K_DEFAULT", "SNIPPET_CHARS_DEFAULT", "TOOL_NAMES", "Answer", "McpSettings", "call_tool",
        "tool_definitions"}


def test_stdio_subprocess(sample_index: Path, blocked_title: str) -> None:
    params = StdioServerParameters(command=_exe(), args=_server_args(sample_index), env=_env())
    answers = anyio.run(_run, Client(params, read_timeout_seconds=60), blocked_title)
    check_answers(answers, sample_index)


@pytest.fixture(scope="module")
def http_server(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("mcp") / "mcp.log"
    proc = subprocess.Popen([_exe(), *_server_args(sample_index), "--transport", "streamable-http",
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"drsearch mcp did not start: {log.read_text()[-800:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)


def test_streamable_http(http_server: str, sample_index: Path, blocked_title: str) -> None:
    answers = anyio.run(_run, Client(http_server, read_timeout_seconds=60), blocked_title)
    check_answers(answers, sample_index)


def test_two_http_sessions_at_once_get_the_same_answers(http_server: str, blocked_title: str) -> None:
    async def both() -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = [{}, {}]

        async def one(i: int) -> None:
            results[i] = await _run(Client(http_server, read_timeout_seconds=60), blocked_title)

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, 0)
            tg.start_soon(one, 1)
        return results

    a, b = anyio.run(both)
    assert a == b


@pytest.mark.parametrize(("args", "message"), [
    (["--host", "127.0.0.1"], "--host/--port: only with --transport streamable-http"),
    (["--k", "0"], "argument --k: must be between 1 and 100, got 0"),
    (["--snippet-chars", "zero"], "argument --snippet-chars: not an integer"),
    (["--database", "MISSING"], "MISSING"),
    (["--blocked-docids", "MISSING"], "MISSING"),
])
def test_bad_options_are_one_line_exit_2(sample_index: Path, tmp_path: Path, args: list[str], message: str) -> None:
    missing = str(tmp_path / "missing")
    argv = ["mcp", "--database", str(sample_index), *[missing if a == "MISSING" else a for a in args]]
    p = subprocess.run([_exe(), *argv], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    # one error line (argparse's own errors come after its usage text, as for every verb)
    lines = [line for line in p.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1 and message.replace("MISSING", missing) in lines[0], p.stderr
    assert p.stderr.splitlines()[-1] == lines[0] and "Traceback" not in p.stderr
    assert p.stdout == ""


def test_a_busy_port_is_one_line_exit_2(sample_index: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = subprocess.run([_exe(), "mcp", "--database", str(sample_index), "--transport", "streamable-http",
                            "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "cannot bind" in p.stderr, p.stderr


def _initialize(url: str) -> httpx.Response:
    """A raw streamable-HTTP ``initialize``: the request that opens a session."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "probe", "version": "0"}}}
    return httpx.post(url, json=body, timeout=30,
                      headers={"accept": "application/json, text/event-stream"})


def test_http_sessions_are_capped_and_idle_ones_expire(sample_index: Path, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "mcp.log"
    proc = subprocess.Popen([_exe(), *_server_args(sample_index), "--transport", "streamable-http",
                             "--host", "127.0.0.1", "--port", str(port), "--max-sessions", "2",
                             "--session-idle-timeout", "2"],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-800:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        opened = [_initialize(url) for _ in range(2)]
        assert [r.status_code for r in opened] == [200, 200]
        assert all(r.headers.get("mcp-session-id") for r in opened)
        refused = _initialize(url)
        assert refused.status_code == 503, refused.text
        # a session whose client went away without ending it is closed once idle: room again
        time.sleep(4)
        assert _initialize(url).status_code == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)


@pytest.mark.parametrize("args", [["--max-sessions", "3"], ["--session-idle-timeout", "5"]])
def test_session_options_need_streamable_http(sample_index: Path, args: list[str]) -> None:
    p = subprocess.run([_exe(), "mcp", "--database", str(sample_index), *args], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "only with streamable-http" in p.stderr
