"""Hostile queries are plain text: answered 200 (or a reasoned 422), never a 5xx; bytes repeat."""

from __future__ import annotations

from pathlib import Path

import pytest

from drsearch.contract import canonical_json as dumps
from drsearch.index import Engine

from .conftest import Client, error_of, make_client

HOSTILE = [
    '"unbalanced quote', "NEAR(a b", "NEAR(video game, 3)", "docid:web-1", "title:game", "url:*",
    "*", "**", "game*", "AND OR NOT", "NOT game", "game AND NOT video", "a - b -- c", "-game",
    "(((", ")))", "{a b}", "[x]", "^game", "game + video", "'", "' OR 1=1 --", "'; DROP TABLE chunks; --",
    "\"\"\"", "a\"b\"c", "col:val:val", ":", "::", "video:game:streaming", "\\", "\\\\x00", "%s %d",
    "x" * 5000, "game " * 4000, "émigré naïve café", "🚀 rockets 🎮 games", "\u202eRTL override",
    "עברית ועוד", "مرحبا بالعالم", "中文 搜索 游戏", "日本語のテキスト", "한국어 검색",
    "zero\u200bwidth\u200djoiner", "combining e\u0301 accents", "NUL in \x00 the middle",
    "\x00", "tabs\tand\nnewlines\r\n", "\x7f\x1b[31mred", "\ufeffbom", "\U0010ffff private",
    "boundary-layer flow; 1950s?", "what is the capital of france?", "site:example.com game",
    "game --video", "$(rm -rf /)", "<script>alert(1)</script>", "{{7*7}}", "1e308", "-1", "0x41",
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_query_is_answered(client: Client, sample_index: Path, query: str) -> None:
    r = client.post("/search", {"query": query, "k": 5})
    assert r.status_code == 200, r.text[:300]
    body = r.json()
    assert body["query"] == query and len(body["results"]) <= 5
    with Engine.open(sample_index) as e:
        assert r.content == dumps(e.search(query, 5).to_dict()).encode()


@pytest.mark.parametrize("query", ["x" * 100_000, "🚀" * 40_000, "word " * 20_000])
def test_100kb_queries_get_a_reason(client: Client, query: str) -> None:
    status, etype, message = error_of(client.post("/search", {"query": query, "k": 5}))
    assert (status, etype) == (422, "invalid_query") and "32768" in message


@pytest.mark.parametrize("docid", ["", " ", "\x00", "' OR 1=1 --", "*", "NEAR(", "🚀", "a" * 100_000])
def test_hostile_docids_are_just_unknown(client: Client, docid: str) -> None:
    assert error_of(client.post("/open", {"docid": docid}))[:2] == (404, "not_found")


@pytest.mark.parametrize("url", ["", "http://[", "http://[::1", "https://exa mple.com/%zz", "javascript:alert(1)",
                                 "http://a:99999/", "\x00", "//no-scheme", "http://🚀.example/é?x=1#f",
                                 "https://example.com/" + "a/" * 20_000, "file:///etc/passwd"])
def test_hostile_urls_are_just_unknown(client: Client, url: str) -> None:
    assert error_of(client.post("/open", {"url": url}))[:2] == (404, "not_found")


def test_same_request_same_bytes_across_apps(sample_index: Path) -> None:
    """Two independent apps (as two workers or two restarts would be) answer byte-identically."""
    requests = [("/search", {"query": q, "k": k}) for q, k in
                [("video game streaming", 10), ("climate", 100), ('"NEAR(docid:*', 5), ("the", 50)]]
    requests += [("/open", {"docid": "no-such"}), ("/search", {"query": "flow", "k": 0})]
    first, second = make_client(sample_index), make_client(sample_index)
    try:
        for path, body in requests:
            a = [first.post(path, body) for _ in range(3)]
            b = second.post(path, body)
            assert len({r.content for r in a} | {b.content}) == 1
            assert {r.status_code for r in a} == {b.status_code}
        assert first.get("/health").content == second.get("/health").content
    finally:
        first.close()
        second.close()
