"""The knowledge-graph fixture, ``drsearch kg serve`` and the SPARQL client, over real HTTP on
127.0.0.1 (the endpoint is a ``drsearch kg serve`` subprocess; retry behaviour is checked
against a small scripted server)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.agents import ReplayCache
from drsearch.agents.errors import ReplayMissError
from drsearch.benchmark.generate.drbencher import (
    CachedSparql,
    KGEndpointError,
    SparqlClient,
    SparqlError,
    SparqlSettings,
)
from drsearch.benchmark.generate.drbencher.kgstore import KGStore
from drsearch.index import Engine

from ....helpers import REPO
from .kgserver import CLI, DOCS, KG, kg_serve

P = "PREFIX wd: <http://www.wikidata.org/entity/> PREFIX wdt: <http://www.wikidata.org/prop/direct/> " \
    "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> PREFIX wikibase: <http://wikiba.se/ontology#> "


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with kg_serve() as url:
        yield url


def select(url: str, query: str, **kw: Any) -> list[dict[str, Any]]:
    client = SparqlClient(SparqlSettings(endpoint=url, **kw))
    try:
        ok, body = client.fetch(P + query, "test")
    finally:
        client.close()
    assert ok, body
    return list(json.loads(body)["results"]["bindings"])


def test_the_fixture_holds_the_known_answers(endpoint: str) -> None:
    rows = select(endpoint, "SELECT ?e WHERE { wd:Q3375 wdt:P2044 ?e ; rdfs:label 'Zugspitze'@en }")
    assert [float(r["e"]["value"]) for r in rows] == [2962.0]
    rows = select(endpoint, "SELECT ?city ?games WHERE { ?city wdt:P793 ?games . ?games wdt:P580 ?t "
                            "FILTER(YEAR(?t) = 1964) } ORDER BY ?city")
    assert [r["city"]["value"].rsplit("/", 1)[1] for r in rows] == ["Q1490", "Q1735"]  # Tokyo, Innsbruck
    rows = select(endpoint, "SELECT ?r WHERE { wd:Q1726 wdt:P206 ?r . ?r wdt:P403 wd:Q1653 ; "
                            "rdfs:label 'Isar'@en }")  # Munich lies on the Isar, a tributary of the Danube
    assert [r["r"]["value"] for r in rows] == ["http://www.wikidata.org/entity/Q106588"]
    # ~40 entities of the main types, each with a label and a sitelink count
    rows = select(endpoint, "SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE { ?x wdt:P31 ?t ; rdfs:label ?l ; "
                            "wikibase:sitelinks ?s }")
    assert int(rows[0]["n"]["value"]) >= 40


def test_the_1972_summer_olympics_are_not_the_refuted_q8458() -> None:
    """Q8458 is "human rights" on Wikidata (public sources, data/kg/README.md): the Games are Q8438,
    in the graph and in their article."""
    store = KGStore(KG)
    status, body = store.answer(P + "SELECT ?g ?l WHERE { wd:Q1726 wdt:P793 ?g . ?g rdfs:label ?l }")
    assert status == 200
    assert [(b["g"]["value"], b["l"]["value"]) for b in json.loads(body)["results"]["bindings"]] == \
        [("http://www.wikidata.org/entity/Q8438", "1972 Summer Olympics")]
    status, body = store.answer(P + "ASK { wd:Q8458 ?p ?o }")
    assert status == 200 and json.loads(body)["boolean"] is False
    docs = {json.loads(line)["title"]: json.loads(line) for line in DOCS.read_text().splitlines()}
    assert docs["1972 Summer Olympics"]["qid"] == "Q8438"


def test_every_local_id_is_marked_where_it_is_defined_and_no_old_mark_is_left() -> None:
    """data/kg/README.md: an entity whose Wikidata id nothing confirmed has a ``local:`` IRI,
    marked ``# local id`` on the line that defines it; the old "unverified/wrong QID" marks are gone."""
    import re

    text = KG.read_text()
    defined = {m.group(1) for m in re.finditer(r"^(local:\S+) rdfs:label .*# local id: no Wikidata id confirmed$",
                                               text, re.M)}
    assert defined == set(re.findall(r"local:[A-Za-z_0-9-]+", text)) == {
        "local:Lepontine_Alps", "local:Uri_Alps", "local:Wetterstein", "local:Pennine_Alps", "local:Graian_Alps",
        "local:Garmisch-Partenkirchen", "local:Winter_Olympics_1964", "local:Winter_Olympics_1976",
        "local:Limmat", "local:Nufenen_Pass", "local:Hochwanner"}
    assert "unverified QID" not in text and "wrong QID" not in text


def test_every_article_is_about_a_fixture_entity_and_builds(tmp_path: Path) -> None:
    store = KGStore(KG)
    docs = [json.loads(line) for line in DOCS.read_text().splitlines()]
    for doc in docs:
        local = doc["qid"].startswith("local:")
        iri = f"<https://drsearch.invalid/kg/local/{doc['qid'][6:]}>" if local else f"wd:{doc['qid']}"
        status, body = store.answer(P + f"ASK {{ {iri} rdfs:label ?l }}")
        assert status == 200 and json.loads(body)["boolean"], doc["qid"]
        assert doc["docid"] == (f"kg-local-{doc['qid'][6:]}" if local else f"kg-{doc['qid']}")
    assert "2,962 metres" in next(d["text"] for d in docs if d["qid"] == "Q3375")
    out = tmp_path / "kg.sqlite3"
    r = subprocess.run([*CLI, "build", str(DOCS), "--out", str(out), "--quiet"],
                       capture_output=True, text=True, env={"PYTHONPATH": str(REPO / "src")})
    assert r.returncode == 0, r.stderr
    with Engine.open(out) as engine:
        assert engine.stats()["documents"] == len(docs)


def test_get_and_post_answer_alike_and_bad_queries_are_4xx(endpoint: str) -> None:
    q = "SELECT ?x WHERE { ?x wdt:P31 wd:Q8502 } ORDER BY ?x"
    got = select(endpoint, q, method="GET")
    assert got == select(endpoint, q, method="POST") and len(got) == 8
    r = httpx.post(endpoint, content=P + q, headers={"content-type": "application/sparql-query"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/sparql-results+json"
    assert len(r.json()["results"]["bindings"]) == 8
    r = httpx.get(endpoint, params={"query": "SELEC ?x"})
    assert r.status_code == 400 and "does not parse" in r.json()["error"]["message"]
    assert httpx.get(endpoint.replace("/sparql", "/nope")).status_code == 404
    assert httpx.post(endpoint, content="x", headers={"content-type": "text/plain"}).status_code == 415
    client = SparqlClient(SparqlSettings(endpoint=endpoint))
    try:
        assert client.fetch("SELEC ?x", "bad")[0] is False  # a 4xx is the query's fault: not retried
        assert client.requests == 1
    finally:
        client.close()


def test_kg_serve_refuses_a_file_that_does_not_parse(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix wd: <http://www.wikidata.org/entity/> .\nwd:Q1 wd:P2 wd:Q3 .\nwd:Q1 wd:P2 .\n")
    r = subprocess.run([*CLI, "kg", "serve", "--data", str(bad)],
                       capture_output=True, text=True, env={"PYTHONPATH": str(REPO / "src")}, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"drsearch: error: {bad}:3: not valid Turtle") and r.stderr.count("\n") == 1


class _Scripted(BaseHTTPRequestHandler):
    """Answers from a list of (status, headers, delay_s) steps, then 200 ASK true."""

    steps: list[tuple[int, dict[str, str], float]]
    seen: list[dict[str, str]]
    lock: threading.Lock
    active: list[int]

    def do_GET(self) -> None:
        with self.lock:
            self.seen.append({k.lower(): v for k, v in self.headers.items()})
            step = self.steps.pop(0) if self.steps else (200, {}, 0.0)
            self.active[0] += 1
            self.active[1] = max(self.active[1], self.active[0])
        time.sleep(step[2])
        body = b'{"head":{},"boolean":true}' if step[0] == 200 else b'{"error":"x"}'
        with self.lock:
            self.active[0] -= 1
        self.send_response(step[0])
        for k, v in step[1].items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def scripted(steps: list[tuple[int, dict[str, str], float]]) -> Iterator[tuple[str, type[_Scripted]]]:
    handler = type("H", (_Scripted,), {"steps": list(steps), "seen": [], "lock": threading.Lock(),
                                       "active": [0, 0]})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sparql", handler
    finally:
        server.shutdown()
        server.server_close()


def test_retries_back_off_and_honour_retry_after() -> None:
    waits: list[float] = []
    with scripted([(429, {"retry-after": "7"}, 0.0), (503, {}, 0.0), (502, {}, 0.0)]) as (url, h):
        client = SparqlClient(SparqlSettings(endpoint=url, backoff_s=0.5, user_agent="drsearch-test/1 (x)"),
                              sleep=waits.append)
        ok, body = client.fetch("ASK {}", "q")
        client.close()
    assert ok and json.loads(body) == {"head": {}, "boolean": True}
    assert waits == [7.0, 1.0, 2.0]  # Retry-After beats the 0.5 s first backoff; then 0.5·2^n
    assert {s["user-agent"] for s in h.seen} == {"drsearch-test/1 (x)"}
    assert {s["accept"] for s in h.seen} == {"application/sparql-results+json"}
    with scripted([(503, {}, 0.0)] * 3) as (url, h):
        client = SparqlClient(SparqlSettings(endpoint=url, max_attempts=3), sleep=lambda s: None)
        with pytest.raises(SparqlError, match="failed 3 time"):
            client.fetch("ASK {}", "q")
        client.close()


def test_a_408_is_retried_not_stored_as_the_querys_failure() -> None:
    """408 (the server timed the request out) says nothing about the query: tried again, as
    every status in drsearch.contract.retry's RETRY_STATUSES."""
    waits: list[float] = []
    with scripted([(408, {}, 0.0)]) as (url, h):
        client = SparqlClient(SparqlSettings(endpoint=url, backoff_s=0.5), sleep=waits.append)
        ok, _ = client.fetch("ASK {}", "q")
        client.close()
    assert ok and waits == [0.5] and len(h.seen) == 2


def test_a_per_query_timeout_and_at_most_n_in_flight() -> None:
    with scripted([(200, {}, 1.0)]) as (url, h):
        client = SparqlClient(SparqlSettings(endpoint=url, timeout_s=0.2, max_attempts=2), sleep=lambda s: None)
        assert client.fetch("ASK {}", "slow")[0]  # the first try timed out, the second answered at once
        assert client.requests == 2
        client.close()
    with scripted([(200, {}, 0.3)] * 6) as (url, h):
        client = SparqlClient(SparqlSettings(endpoint=url, max_in_flight=2))
        threads = [threading.Thread(target=client.fetch, args=("ASK {}", "q")) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        client.close()
        assert h.active[1] == 2


def test_results_go_through_the_replay_cache(endpoint: str, tmp_path: Path) -> None:
    q = P + "SELECT ?x WHERE { ?x wdt:P31 wd:Q3024240 } ORDER BY ?x"
    cache = ReplayCache(tmp_path / "c.sqlite3", "record")
    client = SparqlClient(SparqlSettings(endpoint=endpoint))
    live = CachedSparql(cache, client, endpoint).select(q, "states")
    client.close()
    cache.close()
    assert len(live.bindings) == 5 and cache.stats()["sparql"]["stored"] == 1
    replay = ReplayCache(tmp_path / "c.sqlite3", "replay")
    offline = CachedSparql(replay, None, endpoint)  # no client at all
    assert offline.select(q, "states") == live
    with pytest.raises(ReplayMissError, match="other"):
        offline.select(q + " LIMIT 1", "other")
    with pytest.raises(ValueError, match="wikibase:label"):
        offline.select('SELECT ?x WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "en" } }', "x")
    replay.close()


def test_the_probe_fails_loudly_on_an_unreachable_endpoint() -> None:
    client = SparqlClient(SparqlSettings(endpoint="http://127.0.0.1:9/sparql", timeout_s=2))
    with pytest.raises(KGEndpointError, match="unreachable"):
        client.probe()
    client.close()
    with scripted([(500, {}, 0.0)]) as (url, _):
        client = SparqlClient(SparqlSettings(endpoint=url))
        with pytest.raises(KGEndpointError, match="HTTP 500"):
            client.probe()
        client.close()
