"""The front-end contract BM25 passes, for every retriever.

One small embedded slice of the sample corpus (``embedded_corpus``, embedded once a session)
with the sample's blocklist, served by ``bm25``, ``dense``, ``hybrid`` (RRF) and
``hybrid:linear=0.5``, through each door: HTTP (``/search``, ``/retrieve``, ``/open``), the MCP
tools, the pyserini shim, the CLI (``drsearch search``) and ``drsearch run --database`` with
its replay. For each retriever:

- blocked = absent on every path: a blocked page the unblocked retriever returns for its own
  title is in no result, and opening it (by docid or URL) answers exactly as an unknown page;
- the same errors at every door: every bad request gets the same bytes (status, body, exit
  code, stderr) as from BM25;
- byte-identical replay: a run replayed from its cache writes the same trajectories, and the
  same request twice gives the same bytes.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.contract import Retriever
from drsearch.dense import open_retriever
from drsearch.index import BlockList, Engine
from drsearch.server import create_app
from drsearch.tools.cli import main

from ..helpers import DATA
from ..server.conftest import Client, error_of

pytest.importorskip("onnxruntime", reason="the embed extra (onnxruntime) is not installed")

BLOCKED_FILE = DATA / "sample/blocked_docids.txt"
QUESTIONS = DATA / "sample/questions.jsonl"
KINDS = ["bm25", "dense", "hybrid", "hybrid:linear=0.5"]
UNKNOWN = "d-0000000000000000"


def _blocked() -> list[str]:
    return [line.strip() for line in BLOCKED_FILE.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def titles(embedded_corpus: Path) -> dict[str, tuple[str, str]]:
    """Each blocked page's (title, url)."""
    with Engine.open(embedded_corpus) as e:
        return {d: (e.open_document(docid=d).title, e.open_document(docid=d).url) for d in _blocked()}


@pytest.fixture(scope="module", params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def retrievers(embedded_corpus: Path, kind: str) -> Iterator[tuple[Retriever, Retriever]]:
    """(unblocked, blocked) retrievers of ``kind``."""
    plain = open_retriever(embedded_corpus, None, kind)
    blocked = open_retriever(embedded_corpus, BlockList.from_file(BLOCKED_FILE), kind)
    yield plain, blocked
    plain.close()
    blocked.close()


@pytest.fixture(scope="module")
def clients(retrievers: tuple[Retriever, Retriever]) -> Iterator[tuple[Client, Client]]:
    plain, blocked = Client(create_app(retrievers[0])), Client(create_app(retrievers[1]))
    yield plain, blocked
    plain.close()
    blocked.close()


@pytest.fixture(scope="module")
def bm25_client(embedded_corpus: Path) -> Iterator[Client]:
    c = Client(create_app(Engine.open(embedded_corpus, BlockList.from_file(BLOCKED_FILE))))
    yield c
    c.close()


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# -- blocked = absent on every path ---------------------------------------------------------------

def test_blocked_pages_are_absent_from_every_result(kind: str, embedded_corpus: Path, clients: tuple[Client, Client],
                                                    retrievers: tuple[Retriever, Retriever],
                                                    titles: dict[str, tuple[str, str]]) -> None:
    from drsearch.agents.searcher import EngineSearcher
    from drsearch.compat.pyserini import LuceneSearcher
    from drsearch.mcpserver.tools import McpSettings, call_tool

    plain, blocked = clients
    settings = McpSettings()
    for docid, (title, _) in titles.items():
        shown = [h["docid"] for h in plain.post("/search", {"query": title, "k": 5}).json()["results"]]
        assert docid in shown, (kind, docid)  # the page matches its title: only the blocklist hides it
        body = blocked.post("/search", {"query": title, "k": 100})
        assert body.status_code == 200 and docid not in body.text
        assert docid not in blocked.post("/retrieve", {"queries": [title], "topk": 100}).text
        answer = call_tool("search", {"query": title, "k": 100}, EngineSearcher(retrievers[1]), settings)
        assert not answer.is_error and docid not in answer.text
        assert docid not in [h.docid for h in LuceneSearcher(retrievers[1]).search(title, 100)]
        code, out, err = _cli("search", "--database", str(embedded_corpus), "--retriever", kind,
                              "--blocked-docids", str(BLOCKED_FILE), "--k", "100", "--json", title)
        assert code == 0, err
        assert docid not in out and json.loads(out)["results"]


def test_opening_a_blocked_page_is_opening_an_unknown_one(kind: str, clients: tuple[Client, Client],
                                                          retrievers: tuple[Retriever, Retriever],
                                                          titles: dict[str, tuple[str, str]]) -> None:
    from drsearch.agents.searcher import EngineSearcher
    from drsearch.compat.pyserini import LuceneSearcher
    from drsearch.mcpserver.tools import McpSettings, call_tool

    _, blocked = clients
    searcher, settings = EngineSearcher(retrievers[1]), McpSettings()
    for docid, (_, url) in titles.items():
        a, b = blocked.post("/open", {"docid": docid}), blocked.post("/open", {"docid": UNKNOWN})
        assert a.status_code == b.status_code == 404
        assert a.content.replace(docid.encode(), b"ID") == b.content.replace(UNKNOWN.encode(), b"ID")
        gone = "https://unknown.example/page"
        a, b = blocked.post("/open", {"url": url}), blocked.post("/open", {"url": gone})
        assert error_of(a)[:2] == error_of(b)[:2] == (404, "not_found")
        assert a.content.replace(url.encode(), b"U") == b.content.replace(gone.encode(), b"U")
        for tool in ("open", "get_document"):
            x = call_tool(tool, {"docid": docid}, searcher, settings)
            y = call_tool(tool, {"docid": UNKNOWN}, searcher, settings)
            assert (x.is_error, x.text.replace(docid, "ID")) == (y.is_error, y.text.replace(UNKNOWN, "ID"))
        assert LuceneSearcher(retrievers[1]).doc(docid) is None


# -- the same errors at every door ----------------------------------------------------------------

BAD_REQUESTS: list[tuple[str, Any]] = [
    ("/search", {"query": " "}), ("/search", {"query": "x", "k": 0}), ("/search", {"query": "x", "k": "5"}),
    ("/search", {"query": 5}), ("/search", {}), ("/search", {"query": "plague " * 6000}),
    ("/search", {"query": "x", "limit": 3}), ("/search", [1]), ("/retrieve", {"queries": [" "]}),
    ("/retrieve", {"queries": ["x"], "topk": 0}), ("/retrieve", {"queries": "x"}),
    ("/open", {"docid": 7}), ("/open", {}), ("/open", {"docid": "a", "url": "b"}),
]


def test_bad_requests_get_bm25s_bytes(kind: str, clients: tuple[Client, Client], bm25_client: Client,
                                      retrievers: tuple[Retriever, Retriever], embedded_corpus: Path) -> None:
    from drsearch.agents.searcher import EngineSearcher
    from drsearch.mcpserver.tools import McpSettings, call_tool

    _, blocked = clients
    for path, body in BAD_REQUESTS:
        got, want = blocked.post(path, body), bm25_client.post(path, body)
        assert 400 <= got.status_code < 500 and "Traceback" not in got.text, (kind, path, body)
        assert (got.status_code, got.content) == (want.status_code, want.content), (kind, path, body)
    settings = McpSettings()
    with Engine.open(embedded_corpus, BlockList.from_file(BLOCKED_FILE)) as engine:
        for name, args in (("search", {"query": "x", "k": 101}), ("search", {"query": 5}), ("search", {}),
                           ("open", {}), ("get_document", {"docid": "a", "length": 0}), ("python", {})):
            got_answer = call_tool(name, args, EngineSearcher(retrievers[1]), settings)
            want_answer = call_tool(name, args, EngineSearcher(engine), settings)
            assert got_answer.is_error and got_answer == want_answer, (kind, name, args)
    base = ["search", "--database", str(embedded_corpus), "--blocked-docids", str(BLOCKED_FILE)]
    for argv in (["--k", "0", "x"], ["--k", "101", "x"], [" "]):
        got_cli, want_cli = _cli(*base, "--retriever", kind, *argv), _cli(*base, *argv)
        assert got_cli == want_cli and got_cli[0] == 2 and len(got_cli[2].strip().splitlines()) == 1, (kind, argv)


# -- byte-identical results and replay ------------------------------------------------------------

def test_the_same_request_gives_the_same_bytes(kind: str, embedded_corpus: Path,
                                               clients: tuple[Client, Client]) -> None:
    _, blocked = clients
    query = {"query": "video game streaming subscription price", "k": 10}
    first = blocked.post("/search", query).content
    assert blocked.post("/search", query).content == first
    again = open_retriever(embedded_corpus, BlockList.from_file(BLOCKED_FILE), kind)
    try:
        fresh = Client(create_app(again))
        try:
            assert fresh.post("/search", query).content == first  # another process's view: reopened
        finally:
            fresh.close()
    finally:
        again.close()


def test_a_run_replays_byte_for_byte(kind: str, embedded_corpus: Path, tmp_path: Path) -> None:
    from drsearch.dev.chat import serve_fake

    common = ["--questions", str(QUESTIONS), "--quiet", "--limit", "3", "--max-attempts", "1",
              "--database", str(embedded_corpus), "--blocked-docids", str(BLOCKED_FILE), "--retriever", kind]
    with serve_fake({}) as fake:
        code, _, err = _cli("run", *common, "--model", "fake", "--base-url", fake.url, "--out", str(tmp_path / "a"))
        assert code == 0, err
        code, _, err = _cli("run", *common, "--model", "fake", "--base-url", fake.url, "--out", str(tmp_path / "b"))
        assert code == 0, err
    code, _, err = _cli("run", *common, "--replay", str(tmp_path / "a"), "--out", str(tmp_path / "r"))
    assert code == 0, err
    recorded = (tmp_path / "a" / "trajectories.jsonl").read_bytes()
    assert recorded and (tmp_path / "r" / "trajectories.jsonl").read_bytes() == recorded
    assert (tmp_path / "b" / "trajectories.jsonl").read_bytes() == recorded
    recorded_kind = json.loads((tmp_path / "a" / "run.json").read_text()).get("retriever")
    assert (recorded_kind is None) if kind == "bm25" else kind.split(":")[0] in json.dumps(recorded_kind)
    for docid in _blocked():
        assert docid not in recorded.decode()
