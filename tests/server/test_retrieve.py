"""``POST /retrieve``: Search-R1's retrieval contract over the engine and blocklist of /search.

In-process for the shape, the blocklist and bad input (same error types as /search); a real
``drsearch serve`` on 127.0.0.1 for Search-R1's own client-side parsing of our reply.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.contract import QueryTimeoutError
from drsearch.index import BlockList, Engine
from drsearch.server import ServerSettings, create_app

from .conftest import BLOCK_QUERY, Client, error_of, make_client

QUERIES = ["video game streaming", "climate policy", BLOCK_QUERY, '"NEAR(docid:*']


def test_scored_results_are_search_results_in_search_r1_shape(client: Client, sample_index: Path) -> None:
    r = client.post("/retrieve", {"queries": QUERIES, "topk": 5, "return_scores": True})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    result = r.json()["result"]
    assert len(result) == len(QUERIES)
    with Engine.open(sample_index) as engine:
        for query, items in zip(QUERIES, result, strict=True):
            hits = engine.search(query, 5).hits
            assert [set(item) for item in items] == [{"document", "score"}] * len(hits)
            assert [item["document"] for item in items] == [
                {"id": h.docid, "contents": h.title.replace("\n", " ") + "\n" + h.chunk_text} for h in hits]
            assert [item["score"] for item in items] == [h.score for h in hits]
    assert result[0], "the sample corpus answers the first query"


def test_without_scores_the_documents_are_bare(client: Client) -> None:
    scored = client.post("/retrieve", {"queries": QUERIES[:2], "topk": 3, "return_scores": True}).json()
    bare = client.post("/retrieve", {"queries": QUERIES[:2], "topk": 3}).json()
    assert bare == {"result": [[item["document"] for item in items] for items in scored["result"]]}


def test_topk_defaults_to_the_servers_k_and_bytes_are_canonical(sample_index: Path) -> None:
    c = make_client(sample_index, settings=ServerSettings(max_k=20, default_k=4))
    try:
        r = c.post("/retrieve", {"queries": ["video game streaming"]})
        assert len(r.json()["result"][0]) == 4
        again = c.post("/retrieve", {"queries": ["video game streaming"]})
        assert r.content == again.content and r.content.startswith(b'{"result":[[{"contents":')
    finally:
        c.close()


def test_a_blocked_document_never_appears(client: Client, blocked_client: Client, blocked_docid: str) -> None:
    body = {"queries": [BLOCK_QUERY, "video game", BLOCK_QUERY], "topk": 100, "return_scores": True}
    open_ids = [[i["document"]["id"] for i in items] for items in client.post("/retrieve", body).json()["result"]]
    assert open_ids[0][0] == blocked_docid  # the control: without the blocklist it is the top hit
    blocked = blocked_client.post("/retrieve", body).json()["result"]
    assert all(blocked_docid not in [i["document"]["id"] for i in items] for items in blocked)
    assert blocked_docid not in blocked_client.post("/retrieve", {"queries": [BLOCK_QUERY]}).text


@pytest.mark.parametrize(("body", "etype", "says"), [
    ({"queries": ["  "]}, "invalid_query", "queries.0: query is empty"),
    ({"queries": ["ok", ""]}, "invalid_query", "queries.1"),
    ({"queries": ["ok", 5]}, "invalid_query", "queries.1"),
    ({"queries": ["x" * 40_000]}, "invalid_query", "queries.0"),
    ({"queries": ["a " + " ".join(f"w{i}" for i in range(1100))]}, "invalid_query", "1024"),
    ({"queries": "one query"}, "invalid_request", "queries"),
    ({"queries": []}, "invalid_request", "queries must hold 1..512 queries, got 0"),
    ({"queries": ["x"] * 513}, "invalid_request", "queries must hold 1..512 queries, got 513"),
    ({"topk": 3}, "invalid_request", "missing field 'queries'"),
    ({"queries": ["x"], "topk": 0}, "invalid_k", "topk"),
    ({"queries": ["x"], "topk": 101}, "invalid_k", "topk"),
    ({"queries": ["x"], "topk": "5"}, "invalid_k", "topk"),
    ({"queries": ["x"], "topk": 2.5}, "invalid_k", "topk"),
    ({"queries": ["x"], "return_scores": "yes"}, "invalid_request", "return_scores"),
    ({"queries": ["x"], "k": 3}, "invalid_request", "unknown field 'k'"),
    ([], "invalid_request", "JSON object"),
])
def test_bad_input_is_answered_as_search_answers_it(client: Client, body: Any, etype: str, says: str) -> None:
    status, got, message = error_of(client.post("/retrieve", body))
    assert (status, got) == (422, etype) and says in message, message


def test_the_same_faults_get_the_same_types_as_search(client: Client) -> None:
    for search, retrieve in [({"query": " "}, {"queries": [" "]}), ({"query": "x", "k": 0}, {"queries": ["x"], "topk": 0}),
                             ({"query": "x", "k": "1"}, {"queries": ["x"], "topk": "1"})]:
        assert error_of(client.post("/search", search))[:2] == error_of(client.post("/retrieve", retrieve))[:2]
    assert client.post("/retrieve", content=b"{not json").json()["error"]["type"] == "invalid_json"
    assert error_of(client.get("/retrieve"))[:2] == (405, "method_not_allowed")


def test_topk_2_0_is_an_integer(client: Client) -> None:
    r = client.post("/retrieve", content=b'{"queries":["video game"],"topk":2.0}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 200 and len(r.json()["result"][0]) == 2


def test_the_batch_limit_is_a_setting(sample_index: Path) -> None:
    c = make_client(sample_index, settings=ServerSettings(max_batch_queries=2))
    try:
        assert c.post("/retrieve", {"queries": ["a", "b"]}).status_code == 200
        assert error_of(c.post("/retrieve", {"queries": ["a", "b", "c"]}))[:2] == (422, "invalid_request")
    finally:
        c.close()


class _Recording:
    """An engine whose searches note the thread they ran on (and time out on one query)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.threads: set[str] = set()
        self.barrier = threading.Barrier(2, timeout=10)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def search(self, query: str, k: int, **kw: Any) -> Any:
        self.threads.add(threading.current_thread().name)
        if query.startswith("wait"):
            self.barrier.wait()  # both queries must be in flight at once: a serial batch deadlocks
        if query == "slow":
            raise QueryTimeoutError("query ran past its time limit")
        return self._engine.search(query, k, **kw)


def test_a_batch_runs_its_queries_in_parallel_and_a_timeout_is_503(sample_index: Path) -> None:
    with Engine.open(sample_index) as engine:
        recording = _Recording(engine)
        c = Client(create_app(recording, ServerSettings(batch_threads=2)))  # type: ignore[arg-type]
        try:
            r = c.post("/retrieve", {"queries": ["wait video", "wait climate"]})
            assert r.status_code == 200, r.text
            assert len(recording.threads) == 2 and all(t.startswith("drsearch-batch") for t in recording.threads)
            r = c.post("/retrieve", {"queries": ["video", "slow", "climate"]})
            assert error_of(r) == (503, "query_timeout", "queries.1: query ran past its time limit")
            assert r.headers["retry-after"] == "1"
        finally:
            c.close()


def test_every_response_carries_the_identity(blocked_client: Client, blocklist: BlockList,
                                             sample_index: Path) -> None:
    with Engine.open(sample_index) as engine:
        expected = f"{engine.meta['content_identity']}:{blocklist.sha256}"
    responses = [blocked_client.get("/health"), blocked_client.get("/metrics"), blocked_client.get("/stats"),
                 blocked_client.post("/retrieve", {"queries": ["x"]}), blocked_client.post("/search", {"query": ""}),
                 blocked_client.post("/open", {"docid": "nope"}), blocked_client.get("/nope"),
                 blocked_client.get("/search")]
    assert [r.headers.get("x-drsearch-identity") for r in responses] == [expected] * len(responses)
    health = responses[0].json()
    assert expected == f"{health['corpus']['identity']}:{health['blocklist']['sha256']}"


# ---- Search-R1's client, written from its documented shape, against a real server -------------------


def search_r1_batch_search(url: str, queries: list[str], topk: int) -> list[str]:
    """What Search-R1's generation loop does with the retriever: POST the batch with
    ``return_scores`` true, read ``["result"]``, and render each query's list as
    ``Doc i(Title: <first line of contents>) <rest of contents>`` lines."""
    payload = {"queries": queries, "topk": topk, "return_scores": True}
    results = httpx.post(url, json=payload, timeout=30).json()["result"]
    rendered = []
    for retrieval in results:
        text = ""
        for idx, item in enumerate(retrieval):
            contents = item["document"]["contents"]
            lines = contents.split("\n")
            text += f"Doc {idx + 1}(Title: {lines[0]}) " + "\n".join(lines[1:]) + "\n"
        rendered.append(text)
    return rendered


@pytest.mark.slow
def test_search_r1_client_parses_our_reply(sample_index: Path, tmp_path: Path) -> None:
    from .test_e2e import start

    server = start(tmp_path, "--database", str(sample_index), "--verify", "none", workers=1)
    try:
        queries = ["video game streaming", "climate policy"]
        rendered = search_r1_batch_search(server.base + "/retrieve", queries, 3)
        assert len(rendered) == 2
        with Engine.open(sample_index) as engine:
            for query, text in zip(queries, rendered, strict=True):
                hits = engine.search(query, 3).hits
                assert text == "".join(f"Doc {i}(Title: {h.title}) {h.chunk_text}\n"
                                       for i, h in enumerate(hits, 1))
        r = httpx.post(server.base + "/retrieve", json={"queries": [" "]})
        assert r.status_code == 422 and r.json()["error"]["type"] == "invalid_query"
    finally:
        assert server.stop() == 0


# -- the bounds of a batch: one deadline, its results, its bytes ----------------------------------

class _Counting:
    """An engine that counts the searches it starts, each taking at least ``delay_s``."""

    def __init__(self, engine: Engine, delay_s: float = 0.0) -> None:
        self._engine = engine
        self.delay_s = delay_s
        self.started = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def search(self, query: str, k: int, **kw: Any) -> Any:
        with self._lock:
            self.started += 1
        time.sleep(self.delay_s)
        return self._engine.search(query, k, **kw)


@pytest.mark.slow
def test_search_r1_training_batch_of_512_is_answered_by_a_default_serve(sample_index: Path, tmp_path: Path) -> None:
    """Search-R1's trainer sends 512 queries at topk 3 in one /retrieve: a `drsearch serve`
    with no limit flags answers it in Search-R1's shape, as the engine ranks each query."""
    from .test_e2e import start

    with Engine.open(sample_index) as engine:
        titles = sorted({str(t) for (t,) in engine._conn.execute("SELECT title FROM documents") if str(t).strip()})
        queries = [f"{titles[i % len(titles)]} {i}" for i in range(512)]
        want = [[{"id": h.docid, "contents": f"{h.title}\n{h.chunk_text}"} for h in engine.search(q, 3).hits]
                for q in queries]
    server = start(tmp_path, "--database", str(sample_index), "--verify", "none", workers=1)
    try:
        r = httpx.post(server.base + "/retrieve", json={"queries": queries, "topk": 3}, timeout=60)
        assert r.status_code == 200, r.text[:300]
        body = r.json()
        assert list(body) == ["result"] and len(body["result"]) == 512
        assert body["result"] == want
        assert sum(map(len, body["result"])) > 3 * 500  # nearly every query finds its 3
        rendered = search_r1_batch_search(server.base + "/retrieve", queries, 3)
        assert rendered == ["".join(f"Doc {i}(Title: {d['contents'].split(chr(10), 1)[0]}) "
                                    f"{d['contents'].split(chr(10), 1)[1]}\n" for i, d in enumerate(docs, 1))
                            for docs in want]
    finally:
        assert server.stop() == 0


def test_a_batch_over_the_result_cap_is_refused_before_any_work(sample_index: Path) -> None:
    """256 × "the" at topk 100 (94.6 MB in 8.2 s before): 422 naming the cap, no query run."""
    with Engine.open(sample_index) as engine:
        counting = _Counting(engine)
        c = Client(create_app(counting, ServerSettings()))  # type: ignore[arg-type]
        try:
            r = c.post("/retrieve", {"queries": ["the"] * 256, "topk": 100})
            status, etype, message = error_of(r)
            assert (status, etype) == (422, "invalid_request"), r.text
            assert "25600 results" in message and "limit is 5120" in message
            assert counting.started == 0
            # at the cap it is answered
            assert c.post("/retrieve", {"queries": ["the"] * 256, "topk": 10}).status_code == 200
        finally:
            c.close()
    c = make_client(sample_index, settings=ServerSettings(max_batch_results=4))
    try:
        assert c.post("/retrieve", {"queries": ["a", "b"], "topk": 2}).status_code == 200
        assert error_of(c.post("/retrieve", {"queries": ["a", "b"], "topk": 3}))[:2] == (422, "invalid_request")
    finally:
        c.close()


def test_an_answer_over_the_byte_cap_is_refused_and_stops_the_batch(sample_index: Path) -> None:
    with Engine.open(sample_index) as engine:
        counting = _Counting(engine)
        settings = ServerSettings(max_response_bytes=65536, batch_threads=1)
        c = Client(create_app(counting, settings))  # type: ignore[arg-type]
        try:
            one = c.post("/retrieve", {"queries": ["the"], "topk": 10})
            assert one.status_code == 200 and 8192 < len(one.content) <= 65536, len(one.content)  # one fits
            r = c.post("/retrieve", {"queries": ["the"] * 40, "topk": 10})
            assert error_of(r)[:2] == (422, "response_too_large"), r.text
            assert "65536 bytes" in error_of(r)[2]
            assert counting.started < 40  # stopped once over the cap, not run to the end
        finally:
            c.close()


def test_a_batch_has_one_deadline(sample_index: Path) -> None:
    """Ten queries of 0.3 s each, one at a time, under a 0.5 s limit: 503 at about 0.6 s (before:
    each query had its own limit, and the batch answered 200 after 3 s)."""
    with Engine.open(sample_index) as engine:
        counting = _Counting(engine, delay_s=0.3)
        c = Client(create_app(counting, ServerSettings(time_limit_s=0.5, batch_threads=1)))  # type: ignore[arg-type]
        try:
            t = time.monotonic()
            r = c.post("/retrieve", {"queries": [f"video {i}" for i in range(10)], "topk": 3})
            elapsed = time.monotonic() - t
            assert error_of(r)[:2] == (503, "query_timeout"), r.text
            assert "time limit" in error_of(r)[2]
            assert elapsed < 1.5, elapsed
            assert counting.started <= 3
        finally:
            c.close()


def test_a_batch_body_is_the_one_encoding_of_its_results(sample_index: Path) -> None:
    from drsearch.server.encoding import retrieve_json

    queries = [*QUERIES, "climate"]
    c = make_client(sample_index)
    try:
        for scores in (True, False):
            body = c.post("/retrieve", {"queries": queries, "topk": 7, "return_scores": scores}).content
            with Engine.open(sample_index) as engine:
                assert body == retrieve_json([engine.search(q, 7) for q in queries], scores)
    finally:
        c.close()


def test_a_batch_hands_each_thread_its_queries_once(sample_index: Path) -> None:
    """A batch of 40 queries on 2 threads is 2 hand-offs between the event loop and the pool (one
    per thread, each taking the next query in batch order), not 40: each hand-off and the loop's
    wake-up cost about a tenth of a k=3 search. The body is the same."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from drsearch.contract import RetrieveRequest
    from drsearch.server.batch import run_batch
    from drsearch.server.encoding import retrieve_json

    class CountingPool(ThreadPoolExecutor):
        submitted = 0

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            CountingPool.submitted += 1
            return super().submit(fn, *args, **kwargs)

    queries = tuple(f"{q} {i}" for i in range(10) for q in (*QUERIES, "climate"))[:40]
    with Engine.open(sample_index) as engine, CountingPool(max_workers=2) as pool:
        body = asyncio.run(run_batch(engine, RetrieveRequest(queries, 3, True), deadline=time.monotonic() + 60,
                                     max_terms=64, max_bytes=1 << 24, pool=pool))
        assert body == retrieve_json([engine.search(q, 3) for q in queries], True)
    assert CountingPool.submitted == 2
