"""Exact shards: 4 shard servers behind a broker answer every request with the whole index's
bytes (ties, k beyond a shard's hits, /retrieve, /open, errors); a dead shard is a 503 naming
it; shards of another split are refused at start-up (docs/SCALING.md "Exact shards")."""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from drsearch.index import BlockList, BuildSettings, Engine, build
from drsearch.index.shards import build_shards, split_index
from drsearch.server.broker import connect_shards, create_broker_app

from .test_e2e import Server, drsearch_exe, start

WORDS = ["river", "stone", "light", "sea", "book", "quantum", "delta", "gamma"]
BLOCKED = ["d0007", "d0041"]


def _docs() -> list[dict[str, object]]:
    rng = random.Random(7)
    vocab = WORDS + [f"w{i}" for i in range(150)]
    docs: list[dict[str, object]] = []
    for i in range(90):
        if i % 9 == 4:  # a copy of an earlier document: equal scores in other shards (ties)
            text = str(docs[i - 4 * (i // 30 + 1)]["text"])
        else:
            n = rng.randint(3, 400)
            text = " ".join(rng.choice(["the", "of", "a"]) if rng.random() < 0.45 else rng.choice(vocab)
                            for _ in range(n))
        docs.append({"docid": f"d{i:04d}", "url": f"https://ex.org/p/{i % 80}", "title": f"T{i}", "text": text,
                     "aliases": [f"https://alias.ex.org/{i // 2}"]})
    return docs


QUERIES = ["the", "of the a", "river", "river stone", "quantum the", "w3 w5 w7", "w149", "book sea light the",
           "gamma delta w10", "nosuchword", "w1 of", "stone stone river"]


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Path], Path]:
    tmp = tmp_path_factory.mktemp("shards")
    whole = tmp / "whole.sqlite3"
    build(_docs(), whole, BuildSettings(chunk_words=40, chunk_stride=30))
    blocked = tmp / "blocked.txt"
    blocked.write_text("\n".join(BLOCKED) + "\n")
    for d in ("four", "split4"):
        (tmp / d).mkdir()
    # the four shards served below are built straight from the documents (build --shards), and
    # are byte for byte the split of the whole index
    four = [r.path for r in build_shards(_docs(), tmp / "four", 4, BuildSettings(chunk_words=40, chunk_stride=30),
                                         blocklist=BlockList.from_file(blocked))]
    split4 = split_index(whole, tmp / "split4", 4, blocklist=BlockList.from_file(blocked))
    assert [p.read_bytes() for p in four] == [r.path.read_bytes() for r in split4]
    (tmp / "two").mkdir()
    two = [r.path for r in split_index(whole, tmp / "two", 2, blocklist=BlockList.from_file(blocked))]
    return whole, blocked, four, two[1]


@pytest.fixture(scope="module")
def servers(split: tuple[Path, Path, list[Path], Path],
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[Server], Server, Server]]:
    whole, blocked, four, other = split
    tmp = tmp_path_factory.mktemp("served")
    files = [whole, *four, other]
    with ThreadPoolExecutor(len(files)) as pool:
        started = list(pool.map(lambda f: start(tmp, "--database", str(f), "--blocked-docids", str(blocked),
                                                "--verify", "none", workers=1), files))
    broker = None
    try:
        broker = _start_broker(tmp, [s.base for s in started[1:5]])
        yield started[0], started[1:5], started[5], broker
    finally:
        for s in [*started, *([broker] if broker else [])]:
            s.stop()


def _start_broker(tmp: Path, urls: list[str]) -> Server:
    from drsearch.server import free_port

    port = free_port()
    log = tmp / f"broker-{port}.log"
    proc = subprocess.Popen([drsearch_exe(), "serve", "--shards", *urls, "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    for _ in range(300):
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(server.base + "/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        import time
        time.sleep(0.1)
    server.stop()
    raise AssertionError(log.read_text())


def _same(whole: Server, broker: Server, path: str, body: object) -> httpx.Response:
    a = httpx.post(whole.base + path, json=body)
    b = httpx.post(broker.base + path, json=body)
    assert (b.status_code, b.content) == (a.status_code, a.content), (path, body)
    assert b.headers["x-drsearch-identity"] == a.headers["x-drsearch-identity"]
    return a


def test_split_ranks_exactly_and_keeps_ties(split: tuple[Path, Path, list[Path], Path]) -> None:
    whole, blocked, four, _ = split
    bl = BlockList.from_file(blocked)
    with Engine.open(whole, bl) as e:
        assert e.meta["dense_terms"] > 0  # clamped terms: the corpus' avgdl is needed at query time
        scores = [h.score for h in e.search("river stone", 100).hits]
        assert len(scores) != len(set(scores))  # ties across documents
    shards = [Engine.open(p, bl) for p in four]
    try:
        assert sum(s.meta["documents"] for s in shards) == 90
        assert [s.shard["index"] for s in shards if s.shard] == [0, 1, 2, 3]
    finally:
        for s in shards:
            s.close()


def test_broker_answers_with_the_whole_index_bytes(servers: tuple[Server, list[Server], Server, Server]) -> None:
    whole, _, _, broker = servers
    for q in QUERIES:
        for k in (1, 3, 10, 100):  # 100: more than any shard's hits
            got = _same(whole, broker, "/search", {"query": q, "k": k})
            assert all(r["docid"] not in BLOCKED for r in got.json()["results"])
    for scores in (True, False, None):
        body: dict[str, object] = {"queries": QUERIES, "topk": 7}
        if scores is not None:
            body["return_scores"] = scores
        _same(whole, broker, "/retrieve", body)
    for body in ({"docid": "d0012"}, {"docid": "d0089", "offset": 5, "length": 20}, {"docid": BLOCKED[0]},
                 {"docid": "nope"}, {"url": "https://ex.org/p/3"}, {"url": "https://alias.ex.org/10"},
                 {"url": "https://ex.org/p/7"}):
        _same(whole, broker, "/open", body)
    for bad in ({"query": "river", "k": 0}, {"query": ""}, {"queries": "x"}):
        _same(whole, broker, "/retrieve" if "queries" in bad else "/search", bad)
    assert httpx.get(broker.base + "/health").json()["status"] == "ok"
    for method, path, status in (("GET", "/search", 405), ("GET", "/nope", 404), ("POST", "/stats", 405)):
        got = httpx.request(method, broker.base + path)
        assert got.status_code == status and "the broker serves" in got.json()["error"]["message"]


def test_library_broker(servers: tuple[Server, list[Server], Server, Server]) -> None:
    import asyncio

    whole, shards, _, _ = servers

    async def ask() -> tuple[list[bytes], list[httpx.Response]]:
        app = create_broker_app(connect_shards([s.base for s in reversed(shards)]))  # any order
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://broker") as c:
            answers = [(await c.post("/search", json={"query": q, "k": 10})).content for q in QUERIES]
            return answers, [await c.get(path) for path in ("/health", "/stats", "/metrics")]

    want = [httpx.post(whole.base + "/search", json={"query": q, "k": 10}).content for q in QUERIES]
    answers, (health, stats, metrics) = asyncio.run(ask())
    assert answers == want
    _like_the_whole_server(whole, shards, health, stats, metrics, searches=len(QUERIES))


def _samples(text: str) -> dict[str, float]:
    """Prometheus text: every sample line as {name{labels}: value}."""
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line and not line.startswith("#")}


COUNTS = ("documents", "indexed_documents", "empty_documents", "chunks", "tokens", "vocabulary", "postings",
          "blocked_documents", "blocklist", "content_identity", "build")


def _like_the_whole_server(whole: Server, shards: list[Server], health: httpx.Response, stats: httpx.Response,
                           metrics: httpx.Response, *, searches: int, down: int | None = None) -> None:
    """The broker's /health, /stats and /metrics say of the corpus what the whole index's
    server says, name every shard with its identity and state, and count the broker's requests."""
    w_health, w_stats = httpx.get(whole.base + "/health").json(), httpx.get(whole.base + "/stats").json()
    identities = [httpx.get(s.base + "/health").headers["x-drsearch-identity"] if i != down else None
                  for i, s in enumerate(shards)]
    # /health: a server's shape for the whole corpus, and every shard's state
    h = health.json()
    assert health.status_code == (200 if down is None else 503)
    assert h["status"] == ("ok" if down is None else "unavailable") and h["version"] == w_health["version"]
    assert {k: h["corpus"][k] for k in ("identity", "documents", "chunks")} == \
        {k: w_health["corpus"][k] for k in ("identity", "documents", "chunks")}
    assert {k: h["blocklist"][k] for k in ("sha256", "count", "matched")} == \
        {k: w_health["blocklist"][k] for k in ("sha256", "count", "matched")}
    assert h["verify"] == {"state": "off", "message": ""}  # the shards run with --verify none
    assert [(r["index"], r["url"], r["status"]) for r in h["shards"]] == \
        [(i, s.base, "unavailable" if i == down else "ok") for i, s in enumerate(shards)]
    assert [r["identity"] for r in h["shards"] if r["index"] != down] == [x for x in identities if x]
    assert sum(r["documents"] for r in h["shards"]) == w_health["corpus"]["documents"]
    # /stats: the whole index's counts (a shard down or not), each shard's counts and counters
    st = stats.json()
    assert stats.status_code == 200 and {k: st[k] for k in COUNTS} == {k: w_stats[k] for k in COUNTS}
    assert [(r["index"], r["status"]) for r in st["shards"]] == \
        [(i, "unavailable" if i == down else "ok") for i in range(len(shards))]
    for i, row in enumerate(st["shards"]):
        if i == down:
            assert row["server"] is None and f"shard {i} ({shards[i].base})" in row["problem"]
        else:
            assert row["problem"] is None and row["server"]["requests"] > 0
    assert sum(r["chunks"] for r in st["shards"]) == w_stats["chunks"]
    assert st["server"]["endpoints"]["search"]["requests"] >= searches
    assert set(st["server"]) == set(w_stats["server"])
    # /metrics: the server's families and the shards' own
    assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    got, want = _samples(metrics.text), _samples(httpx.get(whole.base + "/metrics").text)
    for name in ("drsearch_corpus_documents", "drsearch_corpus_chunks", "drsearch_blocklist_docids"):
        assert got[name] == want[name]
    assert {k.split("{")[0] for k in want} <= {k.split("{")[0] for k in got}
    assert got['drsearch_requests_total{endpoint="search"}'] >= searches
    assert got["drsearch_shards"] == len(shards)
    for i, s in enumerate(shards):
        assert got[f'drsearch_shard_up{{shard="{i}",url="{s.base}"}}'] == (0 if i == down else 1)
    assert sum(v for k, v in got.items() if k.startswith("drsearch_shard_documents{")) == want["drsearch_corpus_documents"]
    assert f'identity="{w_health["corpus"]["identity"]}"' in metrics.text


def test_broker_health_stats_and_metrics_are_a_servers(servers: tuple[Server, list[Server], Server, Server]) -> None:
    whole, shards, _, broker = servers
    for q in QUERIES:
        httpx.post(broker.base + "/search", json={"query": q, "k": 5})
    responses = [httpx.get(broker.base + path) for path in ("/health", "/stats", "/metrics")]
    for r in responses:
        assert r.headers["x-drsearch-identity"] == httpx.get(whole.base + "/health").headers["x-drsearch-identity"]
    _like_the_whole_server(whole, shards, *responses, searches=len(QUERIES))


def test_broker_takes_search_r1_training_batch(servers: tuple[Server, list[Server], Server, Server]) -> None:
    """512 queries at topk 3 (Search-R1's trainer), with every server at its default limits."""
    whole, _, _, broker = servers
    rng = random.Random(3)
    vocab = WORDS + [f"w{i}" for i in range(150)]
    queries = [" ".join(rng.sample(vocab, rng.randint(1, 3))) for _ in range(512)]
    got = _same(whole, broker, "/retrieve", {"queries": queries, "topk": 3})
    assert got.status_code == 200 and len(got.json()["result"]) == 512


@pytest.mark.parametrize("which", ["other-split", "whole", "missing"])
def test_broker_refuses_a_wrong_shard_set(servers: tuple[Server, list[Server], Server, Server], which: str) -> None:
    whole, shards, other, _ = servers
    urls = [s.base for s in shards]
    if which == "other-split":
        urls[1] = other.base
    elif which == "whole":
        urls[2] = whole.base
    else:
        urls = urls[:3]
    from drsearch.server import free_port

    p = subprocess.run([drsearch_exe(), "serve", "--shards", *urls, "--port", str(free_port())],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("drsearch: error: "), p.stderr
    assert {"other-split": "another split", "whole": "whole index", "missing": "shard 3"}[which] in lines[0]


def test_a_shard_opened_with_another_blocklist_is_refused(split: tuple[Path, Path, list[Path], Path]) -> None:
    from drsearch.contract import BlocklistError

    with pytest.raises(BlocklistError, match="split"):
        Engine.open(split[2][0], BlockList.empty())


def test_a_dead_shard_is_a_503_naming_it(servers: tuple[Server, list[Server], Server, Server]) -> None:
    _, shards, _, broker = servers
    shards[2].stop()
    for path, body in (("/search", {"query": "river", "k": 10}), ("/retrieve", {"queries": ["river"]}),
                       ("/open", {"docid": "d0001"})):
        got = httpx.post(broker.base + path, json=body)
        assert got.status_code == 503
        err = json.loads(got.content)["error"]
        assert err["type"] == "shard_unavailable" and f"shard 2 ({shards[2].base})" in err["message"]
    health = httpx.get(broker.base + "/health")
    assert health.status_code == 503 and "shard 2" in health.json()["problems"][0]
    _like_the_whole_server(servers[0], shards, health, httpx.get(broker.base + "/stats"),
                           httpx.get(broker.base + "/metrics"), searches=0, down=2)


def test_internal_run_merge_verb_is_not_listed() -> None:
    p = subprocess.run([drsearch_exe(), "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "run-merge" not in p.stdout and "==SUPPRESS==" not in p.stdout
    assert "shard " in p.stdout  # the verb that splits an index is listed
    merge = subprocess.run([drsearch_exe(), "run", "merge", "--help"], capture_output=True, text=True, timeout=60)
    assert merge.returncode == 0 and merge.stdout.startswith("usage: drsearch run merge")


def test_broker_health_is_degraded_when_a_shard_says_so() -> None:
    """A shard that answers but reports damage or a failed deep check: the broker's /health is
    200 ``degraded`` naming it (as one server's), its verify state the worst of the shards'."""
    from drsearch.server.broker_status import Shard, health_body

    def facts(i: int) -> Shard:
        stats = {"documents": 10, "chunks": 20, "schema_version": 3, "blocklist": {"matched": i},
                 "shard": {"documents": 30, "chunks": 60, "tokens": 900, "vocabulary": 50,
                           "blocklist": {"sha256": "ab", "count": 3}}}
        return Shard(f"http://s{i}", i, f"id{i}:ab", i, stats)

    shards = [facts(i) for i in range(3)]
    ok = {"status": "ok", "problems": [], "verify": {"state": "ok", "message": ""}}
    bad = {"status": "degraded", "problems": ["deep verification failed: page 7"],
           "verify": {"state": "failed", "message": "page 7"}}
    pending = {**ok, "verify": {"state": "pending", "message": ""}}
    body = health_body("corpus", "split", shards, [(ok, None), (bad, None), (pending, None)])
    assert body["status"] == "degraded"
    assert body["problems"] == ["shard 1 (http://s1): deep verification failed: page 7"]
    assert body["verify"] == {"state": "failed", "message": "shard 1: page 7"}
    assert [r["status"] for r in body["shards"]] == ["ok", "degraded", "ok"]
    assert body["corpus"] == {"identity": "corpus", "schema_version": 3, "documents": 30, "chunks": 60}
    assert body["blocklist"] == {"sha256": "ab", "count": 3, "matched": 3}
    down = health_body("corpus", "split", shards, [(ok, None), (None, "shard 1 (http://s1) did not answer"),
                                                   (pending, None)])
    assert down["status"] == "unavailable" and down["verify"]["state"] == "pending"
    assert down["problems"] == ["shard 1 (http://s1) did not answer"]
