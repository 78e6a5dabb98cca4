"""A release's database is never opened without the release's blocklist.

Every verb and library entry point that opens a database (CLI ``search``, ``search
--topics``, ``open``, ``stats``, ``run --database``, ``mcp``, ``serve``, ``score
--audit-citations --database``, ``Engine.open``, the Pyserini shim, the LangChain
retriever), crossed with every way to name the file (relative, absolute, through a symlink
of the file, through a symlinked release directory, the release directory itself): the
release's leak artifacts never surface. The same probes with ``--blocked-docids none`` do
surface them (so each probe can fail), and say so on stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from drsearch.compat import LuceneSearcher
from drsearch.compat.langchain import DrsearchRetriever
from drsearch.contract import BlocklistError, DocumentNotFoundError
from drsearch.dev.chat import serve_fake
from drsearch.dev.judge import serve_judge
from drsearch.index import BlockList, Engine, sha256_file
from drsearch.server import ServeProcess

from ..helpers import DATA
from .test_cli_score import BIO_CHECKLIST, cli, episode_record, write_run

QUESTIONS = DATA / "sample/questions.jsonl"
LEAKS = sorted(BlockList.from_file(DATA / "sample/blocked_docids.txt").docids)
NAMES = {  # how a user may name the release's database (relative ones from the tmp root)
    "relative": "REL/search/corpus.sqlite3",
    "absolute": "{root}/REL/search/corpus.sqlite3",
    "file-symlink": "{root}/corpus-link.sqlite3",
    "dir-symlink": "rel-link/search/corpus.sqlite3",
    "release-dir": "REL",
}


@pytest.fixture(scope="module")
def root(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release in the DR-256 layout (its corpus: the sample, its list: the sample's three leak
    artifacts), and symlinks to its file and to its directory."""
    base = tmp_path_factory.mktemp("releases")
    rel = base / "REL"
    (rel / "search").mkdir(parents=True)
    (rel / "benchmark").mkdir()
    shutil.copyfile(sample_index, rel / "search/corpus.sqlite3")
    shutil.copyfile(DATA / "sample/blocked_docids.txt", rel / "benchmark/blocked_docids.txt")
    shutil.copyfile(QUESTIONS, rel / "benchmark/questions.jsonl")
    db = rel / "search/corpus.sqlite3"
    (rel / "manifest.json").write_text(json.dumps({
        "format": "drsearch-release-manifest", "format_version": 1,
        "release": {"name": "tiny", "revision": "r42"},
        "files": [{"path": "search/corpus.sqlite3", "bytes": db.stat().st_size, "sha256": sha256_file(db),
                   "role": "corpus_database"}]}))
    (base / "corpus-link.sqlite3").symlink_to(db)
    (base / "rel-link").symlink_to(rel, target_is_directory=True)
    return base


@pytest.fixture(params=sorted(NAMES))
def name(request: pytest.FixtureRequest, root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(root)
    return NAMES[request.param].format(root=root)


@pytest.fixture(scope="module")
def titles(sample_index: Path) -> list[str]:
    """The leak artifacts' own titles: the queries that surface them when nothing hides them."""
    with Engine.open(sample_index) as engine:
        return [engine.open_document(docid=d).title for d in LEAKS]


def leaked(text: str) -> list[str]:
    return [d for d in LEAKS if d in text]


# -- the CLI verbs -------------------------------------------------------------------------------


def cli_probes(name: str, titles: list[str], tmp: Path, *extra: str) -> str:
    """Everything the in-process verbs print for the leak probes, as one text."""
    out = []
    for title in titles:
        rc, text = cli("search", "--database", name, "--k", "100", "--json", *extra, title)
        assert rc == 0, text
        out.append(text)
    for docid in LEAKS:
        rc, text = cli("open", "--database", name, "--docid", docid, "--json", *extra)
        out.append(text)
    topics = tmp / "topics.tsv"
    topics.write_text("".join(f"{i}\t{t}\n" for i, t in enumerate(titles, 1)))
    run = tmp / "run.trec"
    rc, text = cli("search", "--database", name, "--topics", str(topics), "--output", str(run), "--force",
                   "--quiet", "--k", "100", *extra)
    assert rc == 0, text
    out.append(run.read_text())
    return "\n".join(out)


def test_cli_verbs_apply_the_release_list(name: str, titles: list[str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert leaked(cli_probes(name, titles, tmp_path)) == []
    rc, text = cli("stats", "--database", name, "--json")
    assert rc == 0 and json.loads(text)["blocklist"]["count"] == len(LEAKS) == json.loads(text)["blocklist"]["matched"]
    assert "WARNING" not in capsys.readouterr().err


def test_none_shows_them_and_says_so(name: str, titles: list[str], tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert leaked(cli_probes(name, titles, tmp_path, "--blocked-docids", "none")) == LEAKS
    err = capsys.readouterr().err
    assert "WITHOUT its blocklist" in err and "Traceback" not in err


def test_run_applies_the_release_list(name: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_fake({}) as fake:
        rc, text = cli("run", "--questions", str(QUESTIONS), "--database", name, "--model", "m",
                       "--base-url", fake.url, "--out", str(out), "--quiet", "--max-attempts", "1")
    assert rc == 0, text
    assert leaked((out / "trajectories.jsonl").read_text()) == []
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["blocklist_count"] == len(LEAKS) and manifest["blocklist_matched"] == len(LEAKS)


def test_run_without_it_leaks_which_is_why_none_must_be_said(root: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    out = tmp_path / "run"
    with serve_fake({}) as fake:
        rc, text = cli("run", "--questions", str(QUESTIONS), "--database", "REL", "--blocked-docids", "none",
                       "--model", "m", "--base-url", fake.url, "--out", str(out), "--quiet", "--max-attempts", "1")
    assert rc == 0, text
    assert leaked((out / "trajectories.jsonl").read_text())
    assert json.loads((out / "run.json").read_text())["blocklist_count"] == 0


def _env() -> dict[str, str]:
    return {key: os.environ[key] for key in ("PYTHONPATH", "PATH", "HOME") if key in os.environ}


async def _mcp_probe(params: StdioServerParameters, titles: list[str]) -> str:
    out = []
    async with Client(params, read_timeout_seconds=60) as client:
        for title in titles:
            result = await client.call_tool("search", {"query": title, "k": 100})
            out.append(str(result.content[0].text))  # type: ignore[union-attr]
        for docid in LEAKS:
            result = await client.call_tool("get_document", {"docid": docid})
            out.append(str(result.content[0].text))  # type: ignore[union-attr]
    return "\n".join(out)


def test_mcp_applies_the_release_list(name: str, titles: list[str], root: Path) -> None:
    exe = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))
    params = StdioServerParameters(command=exe, args=["mcp", "--database", name], env=_env(), cwd=str(root))
    text = anyio.run(_mcp_probe, params, titles)
    assert leaked(text) == [] and text.count("null") == len(LEAKS)


def test_serve_applies_the_release_list(name: str, titles: list[str], root: Path, tmp_path: Path) -> None:
    with ServeProcess(name, "--verify", "none", log=tmp_path / "serve.log") as server:
        health = httpx.get(server.url + "/health", timeout=10).json()
        assert health["blocklist"]["origin"] == "release" and health["blocklist"]["matched"] == len(LEAKS)
        bodies = [httpx.post(server.url + "/search", json={"query": t, "k": 100}, timeout=10).text for t in titles]
        opened = [httpx.post(server.url + "/open", json={"docid": d}, timeout=10).status_code for d in LEAKS]
    assert leaked("\n".join(bodies)) == [] and opened == [404] * len(LEAKS)


# -- the Python API ------------------------------------------------------------------------------


def test_engine_open_applies_the_release_list(name: str, titles: list[str]) -> None:
    with Engine.open(name) as engine:
        assert engine.blocklist_choice.origin == "release" and len(engine.blocklist) == len(LEAKS)
        assert leaked(json.dumps([engine.search(t, 100).to_dict() for t in titles])) == []
        for docid in LEAKS:
            with pytest.raises(DocumentNotFoundError):
                engine.open_document(docid=docid)
    with Engine.open(name, release_blocklist="none") as engine:  # said in code: no list
        assert engine.blocklist_choice.origin == "release-none"
        assert leaked(json.dumps([engine.search(t, 100).to_dict() for t in titles])) == LEAKS


def test_another_list_needs_the_override(name: str) -> None:
    other = BlockList.from_bytes(f"{LEAKS[0]}\n".encode(), "other.txt")
    with pytest.raises(BlocklistError, match="override-release-blocklist"):
        Engine.open(name, other)
    with Engine.open(name, other, release_blocklist="override") as engine:
        assert engine.blocklist_choice.origin == "release-override" and len(engine.blocklist) == 1


def test_pyserini_shim_applies_the_release_list(name: str, titles: list[str]) -> None:
    with LuceneSearcher(name) as searcher:
        hits = [h.docid for t in titles for h in searcher.search(t, 100)]
        assert leaked(" ".join(hits)) == [] and all(searcher.doc(d) is None for d in LEAKS)


def test_langchain_retriever_applies_the_release_list(name: str, titles: list[str]) -> None:
    with Engine.open(name) as engine:
        retriever = DrsearchRetriever(engine=engine, k=100)
        docids = [d.metadata["docid"] for t in titles for d in retriever.invoke(t)]
    assert docids and leaked(" ".join(docids)) == []


def test_score_citation_audit_applies_the_release_list(name: str, tmp_path: Path) -> None:
    """A cited leak artifact resolves as absent (``notfound``), never as a found page."""
    questions = tmp_path / "bio.jsonl"
    questions.write_text(json.dumps({"task_id": "src0#0", "question": "Does drug 0 work?", "track": "clinical",
                                     "checklist": BIO_CHECKLIST}) + "\n")
    run = write_run(tmp_path / "run", [episode_record("src0#0", 0, "answered", " ".join(LEAKS))])
    with serve_judge() as fake:
        rc, text = cli("score", str(run), "--dataset", "openbiorq", "--questions", str(questions),
                       "--judge-model", "j", "--base-url", fake.url, "--audit-citations", "--database", name,
                       "--out", str(tmp_path / "s.json"), "--json")
    assert rc == 0, text
    existence = json.loads(text)["citations"]["existence"]
    assert (existence["found"], existence["notfound"]) == (0, len(LEAKS))
