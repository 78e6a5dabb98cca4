"""``+rerank``: any retriever's top N reordered by an LLM (the scripted reranker of
drsearch.dev.rerank on 127.0.0.1), at every door, replayed offline, and an endpoint that is
down is an infrastructure failure (exit 2 at start-up, 503 over HTTP, infra_error in a run)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.contract import UpstreamUnavailableError
from drsearch.dense import RerankConfig, open_retriever
from drsearch.dense.rerank import LISTWISE_PROMPT, POINTWISE_PROMPT
from drsearch.dev.chat import serve_chat, serve_fake
from drsearch.dev.rerank import RerankResponder, _overlap
from drsearch.index import Engine, build
from drsearch.server import ServeProcess, free_port
from drsearch.tools.cli import main

from ..helpers import cranfield_docs

QUERY = "pressure distribution on a cone at hypersonic speed"
QUESTIONS = Path(__file__).resolve().parents[2] / "data/sample/questions.jsonl"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rerank") / "cran60.sqlite3"
    build(cranfield_docs()[:60], path)
    return path


@pytest.fixture()
def reranker() -> Iterator[tuple[RerankResponder, str]]:
    fake = RerankResponder(reverse=True)  # reversed: a reranked list is told from BM25's own
    with serve_chat(fake) as url:
        yield fake, url


def _expected(corpus: Path, query: str, depth: int, mode: str) -> list[tuple[str, float]]:
    """What the scripted model's order makes of BM25's ``depth`` best (computed here)."""
    with Engine.open(corpus) as engine:
        ranked = engine.rank(query, depth, max_k=depth)
        texts = engine.chunk_texts([c for c, _ in ranked])
        docids = [h.docid for h in engine.search(query, depth).hits]
    grades = [_overlap(query, " ".join(t.split())[:1200]) for t in texts]
    if mode == "pointwise":
        order = sorted(range(len(texts)), key=lambda i: (-min(10, grades[i]), i))
        return [(docids[i], float(min(10, grades[i]))) for i in order]
    order = sorted(range(len(texts)), key=lambda i: (grades[i], -i))  # the script's reverse order
    return [(docids[i], float(len(texts) - p)) for p, i in enumerate(order)]


@pytest.mark.parametrize("mode", ["listwise", "pointwise"])
def test_the_python_api_reorders_bm25s_top_n(corpus: Path, reranker: tuple[RerankResponder, str],
                                             mode: str) -> None:
    fake, url = reranker
    config = RerankConfig(url, "scripted", depth=8, mode=mode)
    with open_retriever(corpus, None, "bm25+rerank", rerank=config) as r:
        got = [(h.docid, h.score) for h in r.search(QUERY, 8).hits]
        assert got == _expected(corpus, QUERY, 8, mode)
        assert len(r.search(QUERY, 20).hits) == 8  # at most depth documents
        assert r.meta["retriever"].startswith(f"bm25+rerank:{mode}:depth=8:model=scripted:prompt=")
        described = r.stats()["retriever"]["rerank"]
        assert described["prompt"] == (LISTWISE_PROMPT if mode == "listwise" else POINTWISE_PROMPT)
        assert described["depth"] == 8 and described["temperature"] == 0
    bodies = [b for b in fake.requests if b["messages"][0]["content"] != "OK"]
    assert bodies and all(b["temperature"] == 0 and b["seed"] == 20260811 for b in bodies)


def test_a_down_endpoint_mid_search_is_an_error_never_the_unreranked_list(
        corpus: Path, reranker: tuple[RerankResponder, str]) -> None:
    fake, url = reranker
    with open_retriever(corpus, None, "bm25+rerank", rerank=RerankConfig(url, "scripted", depth=5)) as r:
        fake.status = 503
        with pytest.raises(UpstreamUnavailableError, match="HTTP 503"):
            r.search(QUERY, 5)


def _cli(argv: list[str], rc: int = 0) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv, out=buf) == rc
    return buf.getvalue()


def test_search_cli_reranks_and_exits_2_when_the_endpoint_is_down(
        corpus: Path, reranker: tuple[RerankResponder, str], capsys: pytest.CaptureFixture[str]) -> None:
    fake, url = reranker
    out = json.loads(_cli(["search", "--database", str(corpus), "--retriever", "bm25+rerank", "--rerank-url", url,
                           "--rerank-model", "scripted", "--rerank-depth", "6", "--json", "--k", "6", QUERY]))
    assert [(h["docid"], h["score"]) for h in out["results"]] == _expected(corpus, QUERY, 6, "listwise")
    dead = f"http://127.0.0.1:{free_port()}/v1"
    for argv in (["--rerank-url", dead, "--rerank-model", "m"],  # unreachable at start-up
                 ["--rerank-url", url, "--rerank-model", "m", "--rerank-mode", "both"],
                 ["--rerank-url", url, "--rerank-model", "m", "--rerank-depth", "0"],
                 ["--rerank-url", url, "--rerank-model", "m", "--rerank-depth", "abc"],
                 ["--rerank-url", url, "--rerank-model", "m", "--rerank-depth", "101"],
                 ["--rerank-url", "ftp://x", "--rerank-model", "m"],
                 ["--rerank-model", "m"]):
        assert main(["search", "--database", str(corpus), "--retriever", "bm25+rerank", *argv, QUERY]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1, (argv, err)
    assert main(["search", "--database", str(corpus), "--rerank-url", url, "--rerank-model", "m", QUERY]) == 2
    assert "+rerank" in capsys.readouterr().err
    fake.status = 503
    assert main(["search", "--database", str(corpus), "--retriever", "bm25+rerank", "--rerank-url", url,
                 "--rerank-model", "m", QUERY]) == 2
    assert "503" in capsys.readouterr().err


def test_serve_answers_503_when_the_reranker_goes_down(corpus: Path, reranker: tuple[RerankResponder, str]) -> None:
    fake, url = reranker
    with ServeProcess(corpus, "--retriever", "bm25+rerank", "--rerank-url", url, "--rerank-model", "scripted",
                      "--rerank-depth", "5") as server:
        ok = httpx.post(f"{server.url}/search", json={"query": QUERY, "k": 5})
        assert ok.status_code == 200
        assert [h["docid"] for h in ok.json()["results"]] == [d for d, _ in _expected(corpus, QUERY, 5, "listwise")]
        health = httpx.get(f"{server.url}/health")
        assert "+rerank:listwise:depth=5:model=scripted" in health.headers["x-drsearch-identity"]
        assert httpx.get(f"{server.url}/stats").json()["retriever"]["rerank"]["prompt"] == LISTWISE_PROMPT
        fake.status = 502
        down = httpx.post(f"{server.url}/search", json={"query": QUERY, "k": 5})
        assert down.status_code == 503 and down.json()["error"]["type"] == "upstream_unavailable"


def test_serve_refuses_to_start_with_the_reranker_down(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["serve", "--database", str(corpus), "--retriever", "bm25+rerank", "--rerank-url", dead,
                 "--rerank-model", "m", "--port", str(free_port())]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def _run(out: Path, *extra: str, rc: int = 0) -> dict[str, Any]:
    got = _cli(["run", "--questions", str(QUESTIONS), "--out", str(out), "--quiet", "--json", "--limit", "2",
                "--max-attempts", "1", *extra], rc)
    return dict(json.loads(got))


def test_a_reranked_run_replays_offline_and_a_down_reranker_is_infra_error(
        corpus: Path, reranker: tuple[RerankResponder, str], tmp_path: Path) -> None:
    from drsearch.agents.replay import verify_cache

    fake, url = reranker
    rerank = ["--retriever", "bm25+rerank", "--rerank-url", url, "--rerank-model", "scripted",
              "--rerank-depth", "5"]
    with serve_fake({}) as agent:
        base = ["--model", "fake", "--base-url", agent.url, "--database", str(corpus)]
        first = _run(tmp_path / "rec", *base, *rerank)
        assert first["statuses"] == {"answered": 2}
        run_json = json.loads((tmp_path / "rec" / "run.json").read_text())
        assert "+rerank:listwise:depth=5" in run_json["retriever"]
        assert verify_cache(tmp_path / "rec" / "cache.sqlite3").rows.get("rerank", 0) >= 2
        fake.status = 503  # the reranker is down from here on
        _run(tmp_path / "replay", "--replay", str(tmp_path / "rec"), "--database", str(corpus), *rerank)
        recorded = (tmp_path / "rec" / "trajectories.jsonl").read_bytes()
        assert (tmp_path / "replay" / "trajectories.jsonl").read_bytes() == recorded
        # the searches ranked afresh (their answers dropped from a copy of the cache): the
        # reranker's requests still come from the cache, with the endpoint down
        shutil.copy(tmp_path / "rec" / "cache.sqlite3", tmp_path / "reranks.sqlite3")
        with sqlite3.connect(tmp_path / "reranks.sqlite3") as db:
            assert db.execute("DELETE FROM responses WHERE kind = 'tool'").rowcount >= 2
        again = _run(tmp_path / "again", *base, *rerank, "--cache-mode", "replay-then-live",
                     "--cache", str(tmp_path / "reranks.sqlite3"))
        assert again["statuses"] == {"answered": 2}
        assert (tmp_path / "again" / "trajectories.jsonl").read_bytes() == recorded
        # live searches (a fresh cache) with the reranker down: infrastructure failures
        down = _run(tmp_path / "down", *base, *rerank, "--cache-mode", "replay-then-live",
                    "--cache", str(tmp_path / "fresh.sqlite3"), rc=1)
        assert down["statuses"] == {"infra_error": 2}


def test_search_topics_reranks(corpus: Path, reranker: tuple[RerankResponder, str], tmp_path: Path) -> None:
    _, url = reranker
    topics = tmp_path / "topics.tsv"
    topics.write_text(f"q1\t{QUERY}\n")
    run = tmp_path / "run.trec"
    summary = json.loads(_cli(["search", "--database", str(corpus), "--retriever", "bm25+rerank", "--rerank-url", url,
                               "--rerank-model", "scripted", "--rerank-depth", "4", "--topics", str(topics),
                               "--output", str(run), "--json"]))
    assert summary["retriever"] == "bm25+rerank" and summary["lines"] == 4
    assert [line.split()[2] for line in run.read_text().splitlines()] == [
        d for d, _ in _expected(corpus, QUERY, 4, "listwise")]


def test_mcp_serves_the_reranked_order(corpus: Path, reranker: tuple[RerankResponder, str]) -> None:
    import anyio
    mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from ..mcpserver.test_mcp import _env, _exe
    _, url = reranker

    async def run(client: Any) -> str:
        async with client:
            found = await client.call_tool("search", {"query": QUERY, "k": 5})
            return str(found.content[0].text)

    params = mcp.StdioServerParameters(command=_exe(), env=_env(), args=[
        "mcp", "--database", str(corpus), "--retriever", "bm25+rerank", "--rerank-url", url,
        "--rerank-model", "scripted", "--rerank-depth", "5"])
    found = anyio.run(run, mcp.Client(params, read_timeout_seconds=120))
    assert [h["docid"] for h in json.loads(found)] == [d for d, _ in _expected(corpus, QUERY, 5, "listwise")]
