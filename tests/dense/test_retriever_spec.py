"""The retriever syntax ``bm25|dense|hybrid[:rrf|:linear=W][+rerank]`` at every door, the
linear fusion, and query vectors in the replay cache (a replayed dense run needs no model)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import drsearch.dense.embed as embed_module
from drsearch.contract import InvalidInputError
from drsearch.dense import (
    Embedder,
    HybridRetriever,
    RetrieverSpec,
    default_sidecar,
    embed_corpus,
    open_retriever,
    parse_retriever,
)
from drsearch.dense.hybrid import linear
from drsearch.index import BuildSettings, Engine, build
from drsearch.server import ServeProcess
from drsearch.tools.cli import main

from ..helpers import cranfield_docs

QUERY = "pressure distribution on a cone at hypersonic speed"
QUESTIONS = Path(__file__).resolve().parents[2] / "data/sample/questions.jsonl"


# -- the syntax (no model needed) ---------------------------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("bm25", RetrieverSpec("bm25")),
    ("dense", RetrieverSpec("dense")),
    ("hybrid", RetrieverSpec("hybrid", "rrf")),
    ("hybrid:rrf", RetrieverSpec("hybrid", "rrf")),
    ("hybrid:linear=0.3", RetrieverSpec("hybrid", "linear", 0.3)),
    ("hybrid:linear=1", RetrieverSpec("hybrid", "linear", 1.0)),
    ("hybrid:linear=-0", RetrieverSpec("hybrid", "linear", 0.0)),
    ("dense+rerank", RetrieverSpec("dense", rerank=True)),
    ("hybrid:linear=0.5+rerank", RetrieverSpec("hybrid", "linear", 0.5, True)),
])
def test_specs_parse(text: str, want: RetrieverSpec) -> None:
    assert parse_retriever(text) == want


def test_a_spec_prints_canonically() -> None:
    assert str(parse_retriever("hybrid")) == "hybrid:rrf"
    assert str(parse_retriever("hybrid:linear=0.50+rerank")) == "hybrid:linear=0.5+rerank"


@pytest.mark.parametrize("text", ["", "bm26", "dense:rrf", "bm25:linear=0.5", "hybrid:linear=1.5",
                                  "hybrid:linear=nan", "hybrid:linear=", "hybrid:linear=x", "hybrid:sum",
                                  "hybrid+rerank+rerank", "Dense", "hybrid:linear=inf"])
def test_bad_specs_are_one_line_invalid_input(text: str) -> None:
    with pytest.raises(InvalidInputError) as e:
        parse_retriever(text)
    assert "\n" not in e.value.message


@pytest.mark.parametrize("text", ["bm26", "hybrid:linear=2"])
def test_a_bad_spec_is_exit_2_at_every_cli_door(text: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "c.sqlite3"
    build(cranfield_docs()[:3], db)
    topics = tmp_path / "t.tsv"
    topics.write_text("1\thypersonic\n")
    for argv in (["search", "--database", str(db), "--retriever", text, "x"],
                 ["search", "--database", str(db), "--retriever", text, "--topics", str(topics),
                  "--output", str(tmp_path / "run.trec")],
                 ["serve", "--database", str(db), "--retriever", text, "--port", "1"],
                 ["mcp", "--database", str(db), "--retriever", text],
                 ["run", "--questions", str(QUESTIONS), "--database", str(db), "--retriever", text,
                  "--out", str(tmp_path / "run"), "--model", "m", "--base-url", "http://127.0.0.1:9"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "retriever" in err, (argv, err)
    assert not (tmp_path / "run.trec").exists() and not (tmp_path / "run").exists()


def test_linear_fusion_normalises_weighs_and_breaks_ties() -> None:
    chunk_doc = np.arange(10)  # one chunk a document
    bm25 = [(1, 9.0), (2, 5.0), (3, 1.0)]  # normalised 1, 0.5, 0
    dense = [(3, 0.8), (4, 0.4), (2, 0.0)]  # normalised 1, 0.5, 0
    got = linear(bm25, dense, chunk_doc, 10, 0.25)
    want = {1: 0.75 * 1.0, 2: 0.75 * 0.5 + 0.25 * 0.0, 3: 0.25 * 1.0 + 0.75 * 0.0, 4: 0.25 * 0.5}
    assert got == sorted(((c, want[c]) for c in want), key=lambda e: (-e[1], e[0]))
    # W = 0: BM25's order; W = 1: dense's; equal scores: the lower chunk first
    assert [c for c, _ in linear(bm25, dense, chunk_doc, 10, 0.0)][:3] == [1, 2, 3]
    assert [c for c, _ in linear(bm25, dense, chunk_doc, 10, 1.0)][:2] == [3, 4]
    flat = linear([(5, 2.0), (6, 2.0)], [], chunk_doc, 10, 0.5)  # all equal: 1.0 each, then 0.5 weight
    assert flat == [(5, 0.5), (6, 0.5)]
    assert linear([], [], chunk_doc, 10, 0.5) == []


# -- the doors (the embed extra) ----------------------------------------------------------------

@pytest.fixture(scope="module")
def embedder() -> Embedder:
    pytest.importorskip("onnxruntime", reason="the embed extra (onnxruntime) is not installed")
    return Embedder()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    path = tmp_path_factory.mktemp("spec") / "cran15.sqlite3"
    build(cranfield_docs()[:15], path, BuildSettings(chunk_words=60, chunk_stride=45))
    with Engine.open(path) as engine:
        embed_corpus(engine, default_sidecar(path), embedder)
    return path


@pytest.fixture(scope="module")
def linear_retriever(corpus: Path, embedder: Embedder) -> Iterator[Any]:
    r = open_retriever(corpus, None, "hybrid:linear=0.3", embedder=embedder)
    yield r
    r.close()


def _cli(argv: list[str], rc: int = 0) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv, out=buf) == rc
    return buf.getvalue()


def test_the_python_api_takes_a_linear_hybrid(linear_retriever: Any, corpus: Path, embedder: Embedder) -> None:
    assert isinstance(linear_retriever, HybridRetriever)
    fusion = linear_retriever.stats()["retriever"]["fusion"]
    assert fusion == {"method": "linear", "weight": 0.3, "normalisation": "minmax", "depth": 100}
    assert linear_retriever.meta["retriever"].startswith("hybrid:linear:w=0.3:norm=minmax:depth=100:dense:")
    hits = linear_retriever.search(QUERY, 10).hits
    assert hits and all(0.0 <= h.score <= 1.0 for h in hits)
    with open_retriever(corpus, None, "dense", embedder=embedder) as d, \
            open_retriever(corpus, None, "hybrid:linear=1", embedder=embedder) as only_dense:
        assert [h.docid for h in only_dense.search(QUERY, 5).hits] == [h.docid for h in d.search(QUERY, 5).hits]
    again = linear_retriever.search(QUERY, 10)
    assert [(h.docid, h.score) for h in again.hits] == [(h.docid, h.score) for h in hits]


def test_search_cli_and_topics_take_a_linear_hybrid(corpus: Path, linear_retriever: Any, tmp_path: Path) -> None:
    out = json.loads(_cli(["search", "--database", str(corpus), "--retriever", "hybrid:linear=0.3", "--json",
                           "--k", "5", QUERY]))
    assert [h["docid"] for h in out["results"]] == [h.docid for h in linear_retriever.search(QUERY, 5).hits]
    topics = tmp_path / "topics.tsv"
    topics.write_text(f"q1\t{QUERY}\nq2\tboundary layer transition\n")
    runs = []
    for threads in ("1", "2"):
        run = tmp_path / f"run{threads}.trec"
        summary = json.loads(_cli(["search", "--database", str(corpus), "--retriever", "hybrid:linear=0.3",
                                   "--topics", str(topics), "--output", str(run), "--k", "5", "--json",
                                   "--threads", threads]))
        assert summary["retriever"] == "hybrid:linear=0.3" and summary["queries"] == 2
        runs.append(run.read_bytes())
    assert runs[0] == runs[1]
    first = runs[0].decode().splitlines()[0].split()
    assert first[:3] == ["q1", "Q0", linear_retriever.search(QUERY, 1).hits[0].docid]


def test_eval_ranks_with_a_linear_hybrid(corpus: Path, linear_retriever: Any, tmp_path: Path) -> None:
    from drsearch.compat import evaluate, read_qrels, read_run

    topics = tmp_path / "topics.tsv"
    topics.write_text(f"q1\t{QUERY}\nq2\tboundary layer transition\n")
    top = linear_retriever.search(QUERY, 3).hits
    qrels = tmp_path / "qrels"
    qrels.write_text(f"q1 0 {top[2].docid} 1\nq2 0 {top[0].docid} 1\n")
    run = tmp_path / "run.trec"
    _cli(["search", "--database", str(corpus), "--retriever", "hybrid:linear=0.3", "--topics", str(topics),
          "--output", str(run)])
    body = json.loads(_cli(["eval", "--qrels", str(qrels), "--database", str(corpus), "--topics", str(topics),
                            "--retriever", "hybrid:linear=0.3", "--json", "--quiet"]))
    assert body["retriever"] == "hybrid:linear=0.3"
    assert body["means"] == evaluate(read_qrels(qrels), read_run(run)).means


def test_serve_reports_the_linear_fusion(corpus: Path) -> None:
    import httpx

    with ServeProcess(corpus, "--retriever", "hybrid:linear=0.3") as server:
        stats = httpx.get(f"{server.url}/stats").json()
        health = httpx.get(f"{server.url}/health")
    assert stats["retriever"]["fusion"] == {"method": "linear", "weight": 0.3, "normalisation": "minmax",
                                            "depth": 100}
    assert health.json()["retriever"].startswith("hybrid:linear:w=0.3:norm=minmax:depth=100:")
    assert "hybrid:linear:w=0.3" in health.headers["x-drsearch-identity"]


# -- query vectors in the replay cache ----------------------------------------------------------

def _run(out: Path, *extra: str, rc: int = 0) -> dict[str, Any]:
    got = _cli(["run", "--questions", str(QUESTIONS), "--out", str(out), "--quiet", "--json", "--limit", "2",
                "--max-attempts", "1", *extra], rc)
    return dict(json.loads(got))


def _no_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The model files gone: any attempt to load the embedding model fails."""
    monkeypatch.setattr(embed_module, "default_model_path", lambda: tmp_path / "absent" / "model.onnx")
    with pytest.raises(embed_module.EmbeddingModelError):
        Embedder()


def test_a_dense_run_replays_without_the_model(corpus: Path, embedder: Embedder, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from drsearch.agents.replay import verify_cache
    from drsearch.dev.chat import serve_fake

    with serve_fake({}) as fake:
        base = ["--model", "fake", "--base-url", fake.url]
        first = _run(tmp_path / "rec", *base, "--database", str(corpus), "--retriever", "dense")
        assert first["statuses"] == {"answered": 2}
        rows = verify_cache(tmp_path / "rec" / "cache.sqlite3").rows
        assert rows.get("embed", 0) >= 2  # every query's vector kept
        _no_model(monkeypatch, tmp_path)
        # replayed against the corpus: every search from the cache, no model loaded
        _run(tmp_path / "replay", "--replay", str(tmp_path / "rec"), "--database", str(corpus),
             "--retriever", "dense")
        recorded = (tmp_path / "rec" / "trajectories.jsonl").read_bytes()
        assert (tmp_path / "replay" / "trajectories.jsonl").read_bytes() == recorded
        # another retriever over the same cache: its searches are live, their vectors cached
        hybrid = _run(tmp_path / "hyb", *base, "--database", str(corpus), "--retriever", "hybrid",
                      "--cache-mode", "replay-then-live", "--cache", str(tmp_path / "rec" / "cache.sqlite3"))
        assert hybrid["statuses"] == {"answered": 2}
        # a query the cache lacks needs the model: an infrastructure failure, not an answer
        new = tmp_path / "new-cache.sqlite3"
        missing = _run(tmp_path / "miss", *base, "--database", str(corpus), "--retriever", "dense",
                       "--cache-mode", "replay-then-live", "--cache", str(new), rc=1)
        assert missing["statuses"] == {"infra_error": 2}


def test_a_live_dense_run_without_the_model_is_exit_2(corpus: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnxruntime", reason="the embed extra (onnxruntime) is not installed")
    _no_model(monkeypatch, tmp_path)
    rc = main(["run", "--questions", str(QUESTIONS), "--out", str(tmp_path / "run"), "--database", str(corpus),
               "--retriever", "dense", "--model", "m", "--base-url", "http://127.0.0.1:9"])
    assert rc == 2 and capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "run").exists()

