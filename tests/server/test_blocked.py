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


def _counters(c: Client) -> tuple[object, str]:
    """/stats' server counters without latencies, and /metrics without its timing lines."""
    server = c.get("/stats").json()["server"]
    counts = {name: {k: v for k, v in ep.items() if k != "latency_ms"}
              for name, ep in server["endpoints"].items()}
    metrics = "\n".join(line for line in c.get("/metrics").text.splitlines()
                         if "duration" not in line and "uptime" not in line)
    return (counts, server["requests"], server["errors"]), metrics


def test_counters_do_not_tell_blocked_from_missing(sample_index: Path, blocked_docid: str,
                                                    blocklist: BlockList) -> None:
    """Opening a blocked document moves every public counter exactly as a missing one does."""
    url = _url_of(sample_index, blocked_docid)
    for blocked, missing in (({"docid": blocked_docid}, {"docid": "web-" + "0" * 16}),
                             ({"url": url + "#x"}, {"url": "https://unknown.example/"})):
        runs = []
        for body in (blocked, missing):
            c = make_client(sample_index, blocklist)
            try:
                before = _counters(c)
                assert c.post("/open", body).status_code == 404
                time.sleep(0.2)  # anything counted after the response would have been by now
                runs.append((before, _counters(c)))
            finally:
                c.close()
        (b0, b1), (m0, m1) = runs
        assert b0 == m0 and b1 == m1
        assert "blocked" not in b1[1] and "blocked" not in str(b1[0])


def test_without_a_blocklist_everything_is_served(client: Client, blocked_docid: str) -> None:
    assert client.post("/open", {"docid": blocked_docid}).status_code == 200
    assert client.get("/health").json()["blocklist"]["enabled"] is False
