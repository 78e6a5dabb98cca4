"""Blocked documents do not exist over HTTP: same 404 as unknown ones, never in results."""

from __future__ import annotations

import time
from pathlib import Path

from drsearch.index import BlockList, Engine

from .conftest import BLOCK_QUERY, Client, error_of, make_client


def _url_of(index: Path, docid: str) -> str:
    with Engine.open(index) as e:
        return e.open_document(docid=docid).url


def test_blocked_hit_is_gone_and_k_is_kept(blocked_client: Client, client: Client, blocked_docid: str) -> None:
    matching = len(client.post("/search", {"query": BLOCK_QUERY, "k": 100}).json()["results"])
    assert 20 < matching < 100
    for k in (1, 10, 20, 100):
        results = blocked_client.post("/search", {"query": BLOCK_QUERY, "k": k}).json()["results"]
        assert blocked_docid not in {h["docid"] for h in results}
        assert len(results) == min(k, matching - 1)


def test_blocked_and_unknown_docids_are_indistinguishable(blocked_client: Client, blocked_docid: str) -> None:
    unknown = "web-" + "0" * (len(blocked_docid) - 4)
    a = blocked_client.post("/open", {"docid": blocked_docid})
    b = blocked_client.post("/open", {"docid": unknown})
    assert a.status_code == b.status_code == 404
    assert a.content.replace(blocked_docid.encode(), b"ID") == b.content.replace(unknown.encode(), b"ID")
    assert {k: v for k, v in a.headers.items() if k != "x-drsearch-worker"} == \
           {k: v for k, v in b.headers.items() if k != "x-drsearch-worker"}


def test_blocked_and_unknown_urls_are_indistinguishable(blocked_client: Client, blocked_docid: str,
                                                        sample_index: Path) -> None:
    url = _url_of(sample_index, blocked_docid)
    unknown = url[:-3] + "zzz" if len(url) > 12 else url + "zzz"
    for variant in (url, url.upper().replace("HTTPS://", "https://", 1), url + "#frag"):
        a, b = blocked_client.post("/open", {"url": variant}), blocked_client.post("/open", {"url": unknown})
        assert error_of(a)[:2] == error_of(b)[:2] == (404, "not_found")
        assert a.content.replace(variant.encode(), b"U") == b.content.replace(unknown.encode(), b"U")


def test_blocked_open_attempts_are_counted(sample_index: Path, blocked_docid: str, blocklist: BlockList) -> None:
    c = make_client(sample_index, blocklist)
    try:
        url = _url_of(sample_index, blocked_docid)
        c.post("/open", {"docid": blocked_docid})
        c.post("/open", {"docid": "no-such-doc"})
        c.post("/open", {"url": url + "#x"})  # resolved after the response: counted in the background
        c.post("/open", {"url": "https://unknown.example/"})
        deadline = time.monotonic() + 5
        while True:
            server = c.get("/stats").json()["server"]
            if server["blocked_open_attempts"] >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert server["blocked_open_attempts"] == 2
        assert server["endpoints"]["open"]["errors"] == 4
        assert "drsearch_blocked_open_attempts_total 2" in c.get("/metrics").text
    finally:
        c.close()


def test_without_a_blocklist_everything_is_served(client: Client, blocked_docid: str) -> None:
    assert client.post("/open", {"docid": blocked_docid}).status_code == 200
    assert client.get("/health").json()["blocklist"]["enabled"] is False
