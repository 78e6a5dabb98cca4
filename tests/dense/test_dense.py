"""Dense retrieval: ``drsearch embed``, the sidecar, exact search, its doors and its bad input."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

import drsearch.dense as dense
from drsearch.contract import IDENTITY_HEADER, CorpusFileError, Retriever, canonical_json, fleet_identity
from drsearch.dense import (
    DenseRetriever,
    Embedder,
    EmbeddingModelError,
    VectorsError,
    best_per_document,
    default_sidecar,
    embed_corpus,
    open_retriever,
)
from drsearch.dense.sidecar import open_records, read_header
from drsearch.index import BlockList, BuildSettings, Engine, build
from drsearch.server import ServeProcess
from drsearch.tools.cli import main

from ..helpers import cranfield_docs

pytest.importorskip("onnxruntime", reason="the embed extra (onnxruntime) is not installed")

QUERY = "pressure distribution on a cone at hypersonic speed"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    """40 Cranfield abstracts in 60-word chunks (several per document), with their vectors."""
    path = tmp_path_factory.mktemp("dense") / "cran40.sqlite3"
    build(cranfield_docs()[:40], path, BuildSettings(chunk_words=60, chunk_stride=45))
    with Engine.open(path) as engine:
        embed_corpus(engine, default_sidecar(path), embedder)
    return path


@pytest.fixture(scope="module")
def retriever(corpus: Path, embedder: Embedder) -> Iterator[Retriever]:
    r = open_retriever(corpus, None, "dense", embedder=embedder)
    yield r
    r.close()


def _top_docid(retriever: Retriever) -> str:
    return retriever.search(QUERY, 1).hits[0].docid


def _cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- the public surface -------------------------------------------------------------------------

def test_public_api_is_pinned() -> None:
    assert sorted(dense.__all__) == sorted([
        "RETRIEVERS", "DenseRetriever", "HybridRetriever", "EmbedReport", "Embedder", "EmbeddingModelError", "TextEmbedder",
        "VectorsError", "best_per_document", "default_sidecar", "embed_corpus", "open_retriever",
        "RetrieverSpec", "SYNTAX", "parse_retriever", "RerankConfig", "RerankedRetriever"])


def test_generators_import_the_same_embedder() -> None:
    from drsearch.benchmark.generate import embed as old
    assert old.Embedder is Embedder


# -- the sidecar ---------------------------------------------------------------------------------

def test_sidecar_records_model_corpus_and_format(corpus: Path, embedder: Embedder) -> None:
    header, records = open_records(default_sidecar(corpus))
    with Engine.open(corpus) as engine:
        assert header["rows"] == engine.meta["chunks"] == len(records) > 40  # several chunks a document
        assert header["content_identity"] == engine.meta["content_identity"]
    for key, value in embedder.describe().items():
        assert header[key] == value
    assert header["model_sha256"] == "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    assert (header["pooling"], header["normalised"], header["max_tokens"], header["dimension"],
            header["vector_format"]) == ("mean", True, 256, 384, "int8-rowscale")


def test_records_are_the_model_vectors_to_within_half_a_step(corpus: Path, embedder: Embedder) -> None:
    _, records = open_records(default_sidecar(corpus))
    with Engine.open(corpus) as engine:
        texts = engine.chunk_texts([1, 2, 3, len(records)])
    exact = embedder.embed(texts)
    got = records[[0, 1, 2, len(records) - 1]]
    approx = got["v"].astype(np.float64) * got["s"][:, None]
    assert np.all(np.abs(approx - exact) <= got["s"][:, None] * 0.5 + 1e-6)


def test_embed_resumes_after_an_interruption(tmp_path: Path, embedder: Embedder) -> None:
    path = tmp_path / "c.sqlite3"
    build(cranfield_docs()[:6], path, BuildSettings(chunk_words=60, chunk_stride=45))
    whole, side = tmp_path / "whole.vectors", tmp_path / "c.vectors"
    with Engine.open(path) as engine:
        full = embed_corpus(engine, whole, embedder, block=4)
        assert full.embedded == full.rows > 8

        def stop_after_two_blocks(done: int, total: int) -> None:
            if done >= 8:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            embed_corpus(engine, side, embedder, block=4, progress=stop_after_two_blocks)
        assert not side.exists() and (tmp_path / "c.vectors.partial").exists()
        with open(tmp_path / "c.vectors.partial", "ab") as fh:  # half a record, as a crash leaves it
            fh.write(b"\x01\x02\x03")
        resumed = embed_corpus(engine, side, embedder, block=4)
    assert (resumed.resumed_from, resumed.embedded) == (8, full.rows - 8)
    assert side.read_bytes() == whole.read_bytes()
    assert not (tmp_path / "c.vectors.partial").exists()


def test_cli_embed_then_up_to_date(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sqlite3"
    build(cranfield_docs()[:3], path)
    code, out, err = _cli("embed", str(path), "--quiet", capsys=capsys)
    assert code == 0 and "embedded" in out and err == ""
    before = default_sidecar(path).read_bytes()
    code, out, _ = _cli("embed", str(path), "--quiet", capsys=capsys)
    assert code == 0 and "up to date" in out
    assert default_sidecar(path).read_bytes() == before


def test_cli_embed_refuses_to_overwrite_another_corpus_vectors(corpus: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sqlite3"
    build(cranfield_docs()[:3], path)
    other = default_sidecar(corpus).read_bytes()
    default_sidecar(path).write_bytes(other)
    code, out, err = _cli("embed", str(path), "--quiet", capsys=capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "another corpus" in err and "--force" in err
    assert default_sidecar(path).read_bytes() == other  # nothing already written is lost


# -- exact search ----------------------------------------------------------------------------------

def _reference(corpus: Path, embedder: Embedder, query: str, k: int,
               hidden: frozenset[str] = frozenset()) -> list[tuple[str, float]]:
    """The same ranking by another route: Python integers, one chunk at a time."""
    _, records = open_records(default_sidecar(corpus))
    q = embedder.embed([query])[0]
    q_scale = float(np.float32(np.abs(q).max()) / np.float32(127.0))
    qi = [int(x) for x in np.clip(np.rint(q / np.float32(q_scale)), -127, 127)]
    with Engine.open(corpus) as engine:
        chunk_doc = engine.chunk_documents
        best: dict[int, tuple[float, int]] = {}
        for row, rec in enumerate(records, 1):
            score = float(sum(a * b for a, b in zip(rec["v"].tolist(), qi, strict=True))) \
                * float(rec["s"]) * q_scale
            doc = int(chunk_doc[row])
            if doc not in best or (-score, row) < (-best[doc][0], best[doc][1]):
                best[doc] = (score, row)
        order = sorted(best.values(), key=lambda sr: (-sr[0], sr[1]))
        named = [(engine.chunk_texts([row]) and _docid(engine, row), score) for score, row in order]
    return [(d, s) for d, s in named if d not in hidden][:k]


def _docid(engine: Engine, row: int) -> str:
    return str(engine.hits("x", [(row, 0.0)], with_text=False)[0].docid)


def test_dense_search_is_exact_against_a_reference(retriever: Retriever, corpus: Path,
                                                   embedder: Embedder) -> None:
    for query in (QUERY, "boundary layer transition", "heat transfer"):
        got = [(h.docid, h.score) for h in retriever.search(query, 10).hits]
        want = _reference(corpus, embedder, query, 10)
        assert [d for d, _ in got] == [d for d, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)


def test_dense_results_are_byte_identical_run_to_run(corpus: Path) -> None:
    bodies = set()
    for _ in range(2):
        with open_retriever(corpus, None, "dense") as r:  # type: ignore[attr-defined]
            bodies.add(canonical_json(r.search(QUERY, 10).to_dict()))
    assert len(bodies) == 1


def test_ties_go_to_the_lower_chunk_and_each_document_counts_once() -> None:
    scores = np.array([-np.inf, 1.0, 2.0, 2.0, 2.0, 0.5, -np.inf])
    chunk_doc = np.array([0, 1, 1, 2, 3, 3, 4], dtype=np.int32)
    assert best_per_document(scores, chunk_doc, 10) == [(2, 2.0), (3, 2.0), (4, 2.0)]
    assert best_per_document(scores, chunk_doc, 2) == [(2, 2.0), (3, 2.0)]


def test_the_dense_retriever_is_a_retriever(retriever: Retriever) -> None:
    assert isinstance(retriever, Retriever) and isinstance(retriever, DenseRetriever)
    stats = retriever.stats()
    assert stats["scorer"] == "dense" and stats["retriever"]["vectors"]["model_sha256"].startswith("8199be6f")
    assert retriever.meta["retriever"].startswith("dense:sentence-transformers/all-MiniLM-L6-v2:8199be6f699a:")


def test_request_checks_are_bm25s(retriever: Retriever, corpus: Path) -> None:
    from drsearch.contract import MAX_QUERY_CHARS, InvalidKError, InvalidQueryError
    many_terms = " ".join(f"w{i}" for i in range(2000))
    with Engine.open(corpus) as bm25:
        for bad_query, bad_k in (("", 10), ("   ", 10), ("x" * (MAX_QUERY_CHARS + 1), 10), (many_terms, 10),
                                 (QUERY, 0), (QUERY, 101)):
            errors = []
            for r in (bm25, retriever):
                with pytest.raises((InvalidQueryError, InvalidKError)) as e:
                    r.search(bad_query, bad_k)
                errors.append((type(e.value), e.value.message))
            assert errors[0] == errors[1]


# -- blocked documents ----------------------------------------------------------------------------

def test_a_blocked_document_never_surfaces_through_the_python_api(corpus: Path, retriever: Retriever,
                                                                  embedder: Embedder) -> None:
    top = _top_docid(retriever)
    blocklist = BlockList.from_bytes(f"{top}\n".encode(), "blocked.txt")
    with open_retriever(corpus, blocklist, "dense", embedder=embedder) as r:  # type: ignore[attr-defined]
        hits = r.search(QUERY, 100).hits
        assert top not in {h.docid for h in hits} and len(hits) == 39
        assert [h.docid for h in hits] == [d for d, _ in _reference(corpus, embedder, QUERY, 100,
                                                                     frozenset({top}))]


def test_a_blocked_document_never_surfaces_through_the_cli(corpus: Path, retriever: Retriever, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    top = _top_docid(retriever)
    blocked = tmp_path / "blocked.txt"
    blocked.write_text(f"{top}\n")
    code, out, _ = _cli("search", "--database", str(corpus), "--retriever", "dense", "--json", "--k", "100",
                        QUERY, capsys=capsys)
    assert code == 0 and top in {h["docid"] for h in json.loads(out)["results"]}
    code, out, err = _cli("search", "--database", str(corpus), "--retriever", "dense", "--json", "--k", "100",
                          "--blocked-docids", str(blocked), QUERY, capsys=capsys)
    assert code == 0, err
    assert top not in {h["docid"] for h in json.loads(out)["results"]}
    code, _, err = _cli("open", "--database", str(corpus), "--docid", top, "--blocked-docids", str(blocked),
                        capsys=capsys)
    assert code == 1 and "no document" in err


def test_a_blocked_document_never_surfaces_over_http(corpus: Path, retriever: Retriever, tmp_path: Path) -> None:
    top = _top_docid(retriever)
    blocked = tmp_path / "blocked.txt"
    blocked.write_text(f"{top}\n")
    with ServeProcess(corpus, "--verify", "none", "--retriever", "dense", "--blocked-docids",
                      str(blocked)) as server:
        r = httpx.post(server.url + "/search", json={"query": QUERY, "k": 100})
        assert r.status_code == 200
        docids = [h["docid"] for h in r.json()["results"]]
        assert top not in docids and len(docids) == 39
        assert docids == [h.docid for h in retriever.search(QUERY, 100).hits if h.docid != top][:39]
        batch = httpx.post(server.url + "/retrieve", json={"queries": [QUERY], "topk": 100})
        assert batch.status_code == 200 and top not in batch.text
        assert httpx.post(server.url + "/open", json={"docid": top}).status_code == 404
        health = httpx.get(server.url + "/health").json()
        assert health["retriever"] == retriever.meta["retriever"]
        bl_sha = BlockList.from_file(blocked).sha256
        assert r.headers[IDENTITY_HEADER] == fleet_identity(retriever.meta["content_identity"], bl_sha,
                                                            retriever.meta["retriever"])


# -- hybrid -------------------------------------------------------------------------------------------

def test_rrf_adds_reciprocal_ranks_and_breaks_ties_by_chunk() -> None:
    from drsearch.dense.hybrid import rrf
    chunk_doc = np.array([0, 1, 2, 3, 4], dtype=np.int32)
    bm25, dense_list = [(1, 9.0), (2, 8.0)], [(2, 0.9), (3, 0.8), (4, 0.7)]
    got = rrf([bm25, dense_list], chunk_doc, 10)
    assert [c for c, _ in got] == [2, 1, 3, 4]
    assert got[0][1] == 1 / 62 + 1 / 61 and got[1][1] == 1 / 61
    assert rrf([[(3, 1.0)], [(1, 1.0)]], chunk_doc, 2) == [(1, 1 / 61), (3, 1 / 61)]  # a tie: lower chunk


def test_hybrid_fuses_the_two_retrievers_results(corpus: Path, retriever: Retriever, embedder: Embedder) -> None:
    with Engine.open(corpus) as bm25, open_retriever(corpus, None, "hybrid", embedder=embedder,  # type: ignore[attr-defined]
                                                     depth=20) as hybrid:
        for query in (QUERY, "boundary layer transition"):
            lists = [[h.docid for h in r.search(query, 20).hits] for r in (bm25, retriever)]
            fused: dict[str, float] = {}
            for ranked in lists:
                for rank, docid in enumerate(ranked, 1):
                    fused[docid] = fused.get(docid, 0.0) + 1 / (60 + rank)
            got = hybrid.search(query, 10).hits
            assert [h.score for h in got] == sorted(fused.values(), reverse=True)[:10]
            assert all(fused[h.docid] == h.score for h in got)
        assert hybrid.meta["retriever"].startswith("hybrid:rrf:k=60:depth=20:dense:")
        assert hybrid.stats()["retriever"]["fusion"] == {"method": "rrf", "k": 60, "depth": 20}


def test_a_blocked_document_never_surfaces_through_hybrid_cli(corpus: Path, retriever: Retriever, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    top = _top_docid(retriever)
    blocked = tmp_path / "blocked.txt"
    blocked.write_text(f"{top}\n")
    code, out, err = _cli("search", "--database", str(corpus), "--retriever", "hybrid", "--json", "--k", "100",
                          "--blocked-docids", str(blocked), QUERY, capsys=capsys)
    assert code == 0, err
    docids = {h["docid"] for h in json.loads(out)["results"]}
    assert top not in docids and len(docids) > 30


# -- identity ---------------------------------------------------------------------------------------

def test_fleet_identity_names_a_retriever_other_than_bm25() -> None:
    assert fleet_identity("c", "b") == fleet_identity("c", "b", "bm25") == "c:b"
    assert fleet_identity("c", "b", "dense:m:1") == "c:b:dense:m:1"


# -- bad input: one line, exit 2, never BM25 instead -----------------------------------------------

def _search_exit(corpus: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return _cli("search", "--database", str(corpus), "--retriever", "dense", *extra, QUERY, capsys=capsys)


def test_missing_vectors_is_exit_2_naming_drsearch_embed(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sqlite3"
    build(cranfield_docs()[:3], path)
    code, out, err = _search_exit(path, capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1 and "drsearch embed" in err
    with pytest.raises(VectorsError):
        open_retriever(path, None, "dense")


def _copy_corpus(corpus: Path, tmp_path: Path) -> Path:
    copy = tmp_path / corpus.name
    copy.write_bytes(corpus.read_bytes())
    return copy


def _rewrite_header(side: Path, **changes: Any) -> None:
    header, start = read_header(side)
    header.update(changes)
    from drsearch.dense.sidecar import header_bytes
    side.write_bytes(header_bytes(header) + side.read_bytes()[start:])


@pytest.mark.parametrize(("change", "words"), [
    ({"model_sha256": "0" * 64}, "another model"),
    ({"content_identity": "f" * 16}, "another corpus"),
    ({"rows": 7}, "another corpus"),
])
def test_vectors_of_another_model_or_corpus_are_exit_2(corpus: Path, tmp_path: Path, change: dict[str, Any],
                                                       words: str, capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy_corpus(corpus, tmp_path)
    side = default_sidecar(copy)
    side.write_bytes(default_sidecar(corpus).read_bytes())
    _rewrite_header(side, **change)
    if "rows" in change:  # the records cut to match, so that only the corpus check can refuse it
        _, start = read_header(side)
        side.write_bytes(side.read_bytes()[:start + 7 * (384 + 4)])
    code, out, err = _search_exit(copy, capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1 and words in err, err


def test_a_dimension_mismatch_is_exit_2(corpus: Path, tmp_path: Path, embedder: Embedder,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    class Small:
        """The pinned model's description with 8 dimensions: only the sidecar's dimension is
        under test, so its vectors are one fixed unit row each (embedding the whole corpus
        through MiniLM for them took most of this test's time)."""

        def describe(self) -> dict[str, Any]:
            return {**embedder.describe(), "dimension": 8}

        def embed(self, texts: Any) -> Any:
            rows = np.zeros((len(texts), 8), dtype=np.float32)
            rows[:, 0] = 1.0
            return rows

    copy = _copy_corpus(corpus, tmp_path)
    with Engine.open(copy) as engine:
        embed_corpus(engine, default_sidecar(copy), Small())
    code, out, err = _search_exit(copy, capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1 and "dimension 8" in err, err
    with pytest.raises(EmbeddingModelError):
        open_retriever(copy, None, "dense", embedder=embedder)


@pytest.mark.parametrize("cut", [1, 388, 5000])
def test_a_truncated_sidecar_is_exit_2(corpus: Path, tmp_path: Path, cut: int,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy_corpus(corpus, tmp_path)
    data = default_sidecar(corpus).read_bytes()
    default_sidecar(copy).write_bytes(data[:-cut])
    code, out, err = _search_exit(copy, capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1 and "truncated" in err, err


@pytest.mark.parametrize("data", [b"", b"DRSVEC01", b"DRSVEC01" + struct.pack("<I", 50) + b"{}", b"not vectors"])
def test_a_damaged_sidecar_is_exit_2(corpus: Path, tmp_path: Path, data: bytes,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy_corpus(corpus, tmp_path)
    default_sidecar(copy).write_bytes(data)
    code, out, err = _search_exit(copy, capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    with pytest.raises(CorpusFileError):
        open_retriever(copy, None, "dense")


def test_serve_refuses_a_corpus_without_vectors_before_serving(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    build(cranfield_docs()[:3], path)
    run = subprocess.run([sys.executable, "-m", "drsearch.tools.cli", "serve", "--database", str(path),
                          "--retriever", "dense", "--port", "0", "--verify", "none"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "drsearch embed" in run.stderr and "Traceback" not in run.stderr


def test_vectors_only_with_dense(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli("search", "--database", str(corpus), "--vectors", "x.vectors", QUERY, capsys=capsys)
    assert code == 2 and "--vectors" in err


# -- MCP ----------------------------------------------------------------------------------------------

def test_a_blocked_document_never_surfaces_through_mcp_dense(corpus: Path, retriever: Retriever,
                                                            tmp_path: Path) -> None:
    import anyio
    mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from ..mcpserver.test_mcp import _env, _exe
    top = _top_docid(retriever)
    blocked = tmp_path / "blocked.txt"
    blocked.write_text(f"{top}\n")

    async def run(client: Any) -> tuple[str, bool, str]:
        async with client:
            found = await client.call_tool("search", {"query": QUERY, "k": 100})
            opened = await client.call_tool("get_document", {"docid": top})
            return found.content[0].text, bool(opened.is_error), opened.content[0].text

    params = mcp.StdioServerParameters(command=_exe(), env=_env(), args=[
        "mcp", "--database", str(corpus), "--retriever", "dense", "--blocked-docids", str(blocked)])
    found, opened_is_error, opened = anyio.run(run, mcp.Client(params, read_timeout_seconds=120))
    docids = [h["docid"] for h in json.loads(found)]
    assert top not in docids and len(docids) == 39
    assert (opened_is_error, opened) == (False, "null")  # get_document's answer for an unknown docid too


def test_mcp_without_vectors_is_one_line_exit_2(tmp_path: Path) -> None:
    from ..mcpserver.test_mcp import _exe
    path = tmp_path / "c.sqlite3"
    build(cranfield_docs()[:3], path)
    p = subprocess.run([_exe(), "mcp", "--database", str(path), "--retriever", "dense"], capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "drsearch embed" in p.stderr, p.stderr


# -- the agents' replay cache ---------------------------------------------------------------------------

def test_the_replay_cache_keeps_retrievers_apart(corpus: Path, retriever: Retriever, tmp_path: Path) -> None:
    """A search recorded against BM25 is never replayed for a dense run of the same corpus."""
    from drsearch.agents import EngineSearcher
    from drsearch.agents.replay import CachedSearcher, ReplayCache
    cache = ReplayCache(tmp_path / "cache.sqlite3", "replay-then-live")
    try:
        with Engine.open(corpus) as bm25:
            want_bm25 = bm25.search(QUERY, 5).to_dict()
            got_bm25 = CachedSearcher(cache, EngineSearcher(bm25)).search(QUERY, 5)
        got_dense = CachedSearcher(cache, EngineSearcher(retriever)).search(QUERY, 5)
    finally:
        cache.close()
    assert json.loads(got_bm25.body) == json.loads(canonical_json(want_bm25))
    assert json.loads(got_dense.body) == json.loads(canonical_json(retriever.search(QUERY, 5).to_dict()))
    assert got_dense.body != got_bm25.body
