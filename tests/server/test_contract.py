"""The HTTP contract of docs/DESIGN.md, in-process: shapes, bytes, paging, counters, schema."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from drsearch import __version__
from drsearch.contract import canonical_json as dumps
from drsearch.index import Engine, canonicalize_url

from ..helpers import sample_docs
from .conftest import Client, make_client

QUERY = "video game streaming subscription"


def test_health(client: Client, sample_index: Path) -> None:
    r = client.get("/health")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = r.json()
    with Engine.open(sample_index) as e:
        meta = e.meta
    assert body == {
        "status": "ok",
        "problems": [],
        "verify": {"state": "off", "message": ""},
        "version": __version__,
        "corpus": {"identity": meta["content_identity"], "schema_version": meta["schema_version"],
                   "documents": 184, "chunks": meta["chunks"]},
        "blocklist": {"enabled": False, "sha256": body["blocklist"]["sha256"], "count": 0, "matched": 0,
                      "origin": "none", "release_sha256": None},
    }


def test_health_reports_the_blocklist(blocked_client: Client, blocklist: object) -> None:
    bl = blocked_client.get("/health").json()["blocklist"]
    assert bl == {"enabled": True, "sha256": blocklist.sha256, "count": 1,  # type: ignore[attr-defined]
                  "matched": 1, "origin": "file", "release_sha256": None}


def test_search_body_is_the_engines_canonical_json(client: Client, sample_index: Path) -> None:
    with Engine.open(sample_index) as e:
        for k in (1, 7, 10, 100):
            r = client.post("/search", {"query": QUERY, "k": k})
            assert r.status_code == 200
            assert r.content == dumps(e.search(QUERY, k).to_dict()).encode()
    body = r.json()
    assert set(body) == {"query", "k", "results"} and body["k"] == 100 and body["query"] == QUERY
    hit = body["results"][0]
    assert set(hit) == {"rank", "docid", "url", "title", "score", "chunk", "snippet"}
    assert set(hit["chunk"]) == {"ordinal", "text"}
    assert [h["rank"] for h in body["results"]] == list(range(1, len(body["results"]) + 1))
    assert len({h["docid"] for h in body["results"]}) == len(body["results"])


def test_search_default_k_is_10(client: Client) -> None:
    body = client.post("/search", {"query": QUERY}).json()
    assert body["k"] == 10 and len(body["results"]) == 10


def test_open_by_docid_and_by_url_spellings(client: Client, sample_index: Path) -> None:
    doc = sample_docs()[3]
    with Engine.open(sample_index) as e:
        expected = dumps(e.open_document(docid=doc["docid"]).to_dict()).encode()
    r = client.post("/open", {"docid": doc["docid"]})
    assert r.status_code == 200 and r.content == expected
    scheme, rest = doc["url"].split("://", 1)
    host, _, path = rest.partition("/")
    variant = f"{scheme.upper()}://{host.upper()}/{path}#section"
    assert canonicalize_url(variant) == canonicalize_url(doc["url"])
    r = client.post("/open", {"url": variant})
    assert r.status_code == 200 and r.content == expected
    assert r.json()["docid"] == doc["docid"] and r.json()["next_offset"] is None


def test_open_pages_long_texts(client: Client) -> None:
    doc = max(sample_docs(), key=lambda d: len(d["text"]))
    full = client.post("/open", {"docid": doc["docid"]}).json()
    total = full["total_length"]
    assert total == len(full["text"]) > 3000
    pieces, offset = [], 0
    while offset is not None:
        page = client.post("/open", {"docid": doc["docid"], "offset": offset, "length": 1000}).json()
        assert page["total_length"] == total and len(page["text"]) <= 1000
        pieces.append(page["text"])
        offset = page["next_offset"]
    assert "".join(pieces) == full["text"] and len(pieces) == -(-total // 1000)
    past = client.post("/open", {"docid": doc["docid"], "offset": total + 10}).json()
    assert past["text"] == "" and past["next_offset"] is None


def test_stats_is_engine_stats_plus_server_counters(sample_index: Path) -> None:
    c = make_client(sample_index)
    try:
        for _ in range(3):
            assert c.post("/search", {"query": QUERY, "k": 5}).status_code == 200
        assert c.post("/search", {"query": QUERY, "k": 0}).status_code == 422
        assert c.post("/open", {"docid": "no-such-doc"}).status_code == 404
        body = c.get("/stats").json()
    finally:
        c.close()
    with Engine.open(sample_index) as e:
        engine_stats = json.loads(dumps(e.stats()))
    server = body.pop("server")
    # the file by its name only: a client learns nothing of the server's directories
    assert body["file"] == {"path": "sample.sqlite3", "bytes": sample_index.stat().st_size}
    assert str(sample_index.parent) not in json.dumps(body)
    assert body == {**engine_stats, "file": body["file"]}
    search = server["endpoints"]["search"]
    assert search["requests"] == 4 and search["errors"] == 1 and search["server_errors"] == 0
    lat = search["latency_ms"]
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"]
    assert server["endpoints"]["open"] == {**server["endpoints"]["open"], "requests": 1, "errors": 1}
    assert server["workers"] == {"live": 1, "started": 1}
    assert server["requests"] == 5 and server["errors"] == 2 and server["uptime_s"] >= 0
    assert server["endpoints"]["stats"]["requests"] == 0  # counted once answered


def test_metrics_are_prometheus_text(client: Client) -> None:
    client.post("/search", {"query": QUERY, "k": 3})
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(r.text)}
    requests = {s.labels["endpoint"]: s.value for s in families["drsearch_requests"].samples}
    assert requests["search"] >= 1 and set(requests) >= {"search", "open", "health", "stats", "metrics"}
    quantiles = [s for s in families["drsearch_request_duration_seconds"].samples
                 if s.labels.get("endpoint") == "search" and "quantile" in s.labels]
    assert {s.labels["quantile"] for s in quantiles} == {"0.5", "0.95", "0.99"}
    assert all(s.value > 0 for s in quantiles)
    assert "blocked_open" not in r.text
    for name in ("drsearch_client_disconnects", "drsearch_uptime_seconds", "drsearch_workers_live",
                 "drsearch_info", "drsearch_corpus_documents"):
        assert name in families, name


def test_openapi_and_docs(client: Client) -> None:
    r = client.get("/openapi.json")
    assert r.status_code == 200
    spec = r.json()
    assert set(spec["paths"]) == {"/search", "/open", "/retrieve", "/health", "/stats", "/metrics"}
    search = spec["paths"]["/search"]["post"]
    schema = search["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["query"] and schema["properties"]["k"]["maximum"] == 100
    assert schema["additionalProperties"] is False
    assert {"200", "413", "422"} <= set(search["responses"])
    assert "404" in spec["paths"]["/open"]["post"]["responses"]
    retrieve = spec["paths"]["/retrieve"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert retrieve["required"] == ["queries"] and retrieve["properties"]["queries"]["maxItems"] == 512
    assert retrieve["properties"]["topk"]["maximum"] == 100 and retrieve["additionalProperties"] is False
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_worker_header_names_this_process(client: Client) -> None:
    import os

    assert client.get("/health").headers["x-drsearch-worker"] == str(os.getpid())
