"""The whole DR-256 construction recipe on the upstream fixture, offline, with real components:
the one driver of tests/release/test_construct_e2e.py and of
``scripts/make_sample_release.py --recipe``.

The fixture's URLs are fetched from the loopback crawl server (tests/corpus/crawlserver.py,
with the multi-hop pages of construct_pages.py), extracted and indexed as ``drsearch corpus
build --urls`` does; the corpus is served by a real ``drsearch serve`` with the reviewed
blocklist; the reference agent is the scripted chat server of the agent tests
(tests/agents/fake_llm.py), three ``drsearch run --preset dr256 --attempt 0|1|2`` rollouts;
``drsearch score`` grades them with the oracle judge (tests/benchmark/fake_judge.py); then
``construct calibrate`` and ``construct select``. Every ``construct`` stage runs through
the CLI and its printed line is kept.

The scripted reference agent, for each multi-hop question: search the question, open the
first hit (the hop page), search the title of the page the hop names, open it, answer:
right in 0, 0, 1, 2 or 3 of its three rollouts (:data:`PLAN`); the sixth question it
answers after one search, in two turns.

``frozen_fetch_times``: record every fetch's time as null (as the bundled sample crawl
does), so the corpus, and with it the release, is byte-identical on every run in the same
directory; otherwise the fetch times are the crawl's own, as ``corpus build`` records them.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drsearch.corpus import build_corpus, extract_crawl, fetch_urls, stable_docid
from drsearch.corpus.pipeline import DOCS_FILE, default_crawl_dir
from drsearch.tools.cli import main

from ..agents.fake_llm import ScriptKey, serve_fake
from ..benchmark.fake_judge import serve_judge
from ..helpers import drsearch_serve
from .construct_fixture import DUMP_URL, crawl_server, multihop_qids, write_upstream
from .construct_pages import MULTIHOP

# multi-hop question -> rollouts solved (of 3); "two turns": answered after one search, every time
PLAN: list[int | str] = [0, 0, 1, 2, 3, "two turns"]
PER_TIER = 2
SEED = 7


@dataclass
class Recipe:
    root: Path
    pool: Path
    corpus: Path
    blocked: Path
    kept: Path
    runs: list[Path]
    release: Path
    lines: dict[str, str]           # each construct stage's printed line
    requests: list[dict[str, Any]]  # every chat request the reference agent's model received
    plan: dict[str, int | str]      # qid -> PLAN entry


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out), out.getvalue()


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def scripts_for(kept: Path) -> tuple[dict[ScriptKey, list[dict[str, Any]]], dict[str, int | str]]:
    """The scripted reference agent's steps per (attempt, benchmark index), and the plan by qid."""
    index = {r["metadata"]["qid"]: r["metadata"]["benchmark"]["index"] for r in jsonl(kept)}
    scripts: dict[ScriptKey, list[dict[str, Any]]] = {}
    plan = {}
    for qid, q, solved in zip(multihop_qids(), MULTIHOP, PLAN, strict=True):
        plan[qid] = solved
        i = index[qid]
        answer_doc = stable_docid(q["answer_page"][0])
        for attempt in range(3):
            right = solved != "two turns" and attempt < int(solved)
            final = q["answer"] if right else f"not {q['answer']}"
            if solved == "two turns":
                scripts[(attempt, i)] = [{"call": [("search", {"query": "QUESTION", "k": 5})]},
                                         {"content": q["answer"] if attempt == 0 else final}]
            else:
                scripts[(attempt, i)] = [{"call": [("search", {"query": "QUESTION", "k": 5})]},
                                         {"open_first_hit": True},
                                         {"call": [("search", {"query": q["answer_page"][1], "k": 5})]},
                                         {"call": [("open", {"docid": answer_doc})]},
                                         {"content": final}]
    return scripts, plan


def _crawl(urls: Path, corpus: Path, frozen_fetch_times: bool) -> None:
    """``drsearch corpus build --urls`` over the loopback crawl server (fetch, extract, build)."""
    from .test_construct import FETCH

    crawl = default_crawl_dir(corpus)
    with crawl_server() as server:
        fetch_urls(urls, crawl, FETCH, transport=server.transport())
    if frozen_fetch_times:
        records = [json.loads(line) for line in (crawl / "fetches.jsonl").read_text().splitlines() if line]
        (crawl / "fetches.jsonl").write_text("".join(json.dumps({**r, "fetched_at": None}, sort_keys=True,
                                                                 ensure_ascii=False) + "\n"
                                                     for r in records))
    extract_crawl(crawl, crawl / DOCS_FILE, overwrite=True)
    build_corpus(crawl / DOCS_FILE, corpus)


def run_recipe(root: Path, *, frozen_fetch_times: bool = False, release: Path | None = None) -> Recipe:
    """Run the recipe in ``root`` (which must be empty or absent); the release goes to
    ``release`` (default ``root/release``). AssertionError naming the step if one fails."""
    root.mkdir(parents=True, exist_ok=True)
    upstream = write_upstream(root / "upstream.jsonl")
    pool = root / "pool"
    lines: dict[str, str] = {}

    def stage(name: str, *argv: str) -> None:
        code, text = cli("construct", name, *argv)
        assert code == 0, (name, text)
        lines[name] = text.strip()

    stage("consolidate", "--upstream", str(upstream), "--out", str(pool))
    stage("urls", str(pool))
    corpus = root / "corpus" / "corpus.sqlite3"
    corpus.parent.mkdir()
    _crawl(pool / "urls" / "urls.txt", corpus, frozen_fetch_times)
    stage("answers", str(pool), "--database", str(corpus))
    stage("artifacts", str(pool), "--database", str(corpus))
    blocked = root / "blocked_docids.txt"
    blocked.write_text(f"# dataset viewer dump: sample rows 0-7 with their answers\n{stable_docid(DUMP_URL)}\n")
    stage("audit", str(pool), "--database", str(corpus), "--blocked-docids", str(blocked))
    stage("questions", str(pool))
    kept = pool / "questions" / "kept.jsonl"
    scripts, plan = scripts_for(kept)
    runs = [root / "rollouts" / f"attempt-{n}" for n in range(3)]
    with drsearch_serve(corpus, root / "serve.log", "--blocked-docids", str(blocked)) as search, \
            serve_fake(scripts) as fake:
        for n, run in enumerate(runs):
            code, text = cli("run", "--preset", "dr256", "--attempt", str(n), "--questions", str(kept),
                             "--search", search, "--model", "ref-m", "--base-url", fake.url, "--out", str(run),
                             "--quiet", "--max-attempts", "1")
            assert code == 0, ("run", n, text)
        requests = list(fake.requests)
    with serve_judge([]) as judge:  # the oracle judge: correct iff the answer is the label
        code, text = cli("score", str(runs[0]), "--attempts", str(runs[1]), str(runs[2]), "--questions", str(kept),
                         "--judge-model", "judge-m", "--base-url", judge.url, "--backoff", "0")
        assert code == 0, ("score", text)
    stage("calibrate", str(pool), "--runs", *map(str, runs))
    out = release if release is not None else root / "release"
    stage("select", str(pool), "--per-tier", str(PER_TIER), "--seed", str(SEED), "--out", str(out),
          "--name", "drsearch-construct-fixture", "--revision", "1.0.0")
    return Recipe(root, pool, corpus, blocked, kept, runs, out, lines, requests, plan)
