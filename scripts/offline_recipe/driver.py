"""The whole DR-256 construction recipe on the fixture of ``data/construct/``, offline, with real
components: the one driver of ``make sample-release`` (``scripts/make_sample_release.py``) and of
the end-to-end test (tests/release/test_construct_e2e.py). Its release is the bundled sample
release (``drsearch.release.repo_data.SAMPLE_RELEASE`` names it and its inputs).

The fixture's URLs are fetched from the loopback crawl site (``crawl_site.py``, with the
multi-hop pages of ``data/construct/multihop.json``), extracted and indexed as ``drsearch
corpus build --urls`` does; the corpus is served by a real ``drsearch serve`` with the
reviewed blocklist (``data/construct/blocked_docids.txt``); three ``drsearch run --preset
dr256 --attempt 0|1|2`` rollouts; ``drsearch score`` grades them with the oracle judge
(``judge.py``: correct iff the answer is the label); then ``construct calibrate`` and
``construct select``. Every ``construct`` stage runs through the CLI and its printed line
is kept.

**The reference agent is an offline stand-in.** The real recipe calibrates with a real
model (docs/CONSTRUCT.md); offline, the model behind ``drsearch run`` is the scripted chat
server (``chat.py``) replaying ``data/construct/reference_agent.json``: for each multi-hop
question, search the question, open the first hit (the hop page), search the title of the
page the hop names, open it, answer: right in 0, 0, 1, 2 or 3 of its three rollouts; the
sixth question it answers after one search, in two turns. Its model name,
``drsearch-offline-scripted-reference-agent``, is what every question's ``base_pilot`` in the
release records, and the rollouts' leak audit ships in the release (``audit/leak_audit.jsonl``).

``frozen_fetch_times``: record every fetch's time as null (as the bundled sample crawl
does), so the corpus, and with it the release, is byte-identical on every run in the same
directory; otherwise the fetch times are the crawl's own, as ``corpus build`` records them.
"""

from __future__ import annotations

import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drsearch.corpus import FetchSettings, build_corpus, extract_crawl, fetch_urls, stable_docid
from drsearch.corpus.pipeline import DOCS_FILE, default_crawl_dir
from drsearch.dev.chat import ScriptKey, serve_fake
from drsearch.dev.judge import serve_judge
from drsearch.release.repo_data import SAMPLE_RELEASE
from drsearch.server import ServeProcess
from drsearch.tools.cli import main

from .crawl_site import MAX_BYTES
from .fixture import BLOCKED, MULTIHOP, REFERENCE_AGENT, crawl_server, multihop_qids, write_upstream

_AGENT = json.loads(REFERENCE_AGENT.read_text(encoding="utf-8"))
MODEL: str = _AGENT["model"]
# multi-hop question -> rollouts solved (of 3); "two turns": answered after one search, every time
PLAN: list[int | str] = [p["solved"] for p in _AGENT["solved_of_3"]]
# the sample release's name and selection settings, as the repository's manifest.json records them
NAME = str(SAMPLE_RELEASE["name"])
REVISION = str(SAMPLE_RELEASE["revision"])
PER_TIER = int(SAMPLE_RELEASE["per_tier"])
SEED = int(SAMPLE_RELEASE["seed"])
# the sample release's README.md and TERMS.md: the bundled templates, completed for it
RELEASE_README = Path(__file__).with_name("release_README.md")
RELEASE_TERMS = Path(__file__).with_name("release_TERMS.md")
FETCH = FetchSettings(concurrency=8, per_host=2, timeout_s=2.0, retries=1, backoff_s=0.05,
                      max_retry_after_s=5, max_bytes=MAX_BYTES, max_redirects=3)


class RecipeError(RuntimeError):
    """A recipe step failed; the message names the step and carries its output."""


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
    if [q["question"] for q in MULTIHOP] != [p["question"] for p in _AGENT["solved_of_3"]]:
        raise RecipeError(f"{REFERENCE_AGENT}: its questions are not those of multihop.json, in order")
    index = {r["metadata"]["qid"]: r["metadata"]["benchmark"]["index"] for r in jsonl(kept)}
    scripts: dict[ScriptKey, list[dict[str, Any]]] = {}
    plan = {}
    for qid, q, solved in zip(multihop_qids(), MULTIHOP, PLAN, strict=True):
        if qid not in index:
            raise RecipeError(f"multi-hop question {qid} did not survive the audit: {q['question']}")
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
    """``drsearch corpus build --urls`` over the loopback crawl site (fetch, extract, build)."""
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
    ``release`` (default ``root/release``). RecipeError naming the step if one fails."""
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise RecipeError(f"{root} is not empty")
    upstream = write_upstream(root / "upstream.jsonl")
    pool = root / "pool"
    lines: dict[str, str] = {}

    def check(step: str, code: int, text: str) -> None:
        if code != 0:
            raise RecipeError(f"{step} exited {code}: {text.strip()}")

    def stage(name: str, *argv: str) -> None:
        code, text = cli("construct", name, *argv)
        check(f"construct {name}", code, text)
        lines[name] = text.strip()

    stage("consolidate", "--upstream", str(upstream), "--out", str(pool))
    stage("urls", str(pool))
    corpus = root / "corpus" / "corpus.sqlite3"
    corpus.parent.mkdir()
    _crawl(pool / "urls" / "urls.txt", corpus, frozen_fetch_times)
    stage("answers", str(pool), "--database", str(corpus))
    stage("artifacts", str(pool), "--database", str(corpus))
    blocked = root / "blocked_docids.txt"
    shutil.copyfile(BLOCKED, blocked)
    stage("audit", str(pool), "--database", str(corpus), "--blocked-docids", str(blocked))
    stage("questions", str(pool))
    kept = pool / "questions" / "kept.jsonl"
    scripts, plan = scripts_for(kept)
    runs = [root / "rollouts" / f"attempt-{n}" for n in range(3)]
    with ServeProcess(corpus, "--blocked-docids", str(blocked), log=root / "serve.log") as server, \
            serve_fake(scripts) as fake:
        search = server.url
        for n, run in enumerate(runs):
            code, text = cli("run", "--preset", "dr256", "--attempt", str(n), "--questions", str(kept),
                             "--search", search, "--model", MODEL, "--base-url", fake.url, "--out", str(run),
                             "--quiet", "--max-attempts", "1")
            check(f"run --attempt {n}", code, text)
        requests = list(fake.requests)
    with serve_judge([]) as judge:  # the oracle judge: correct iff the answer is the label
        code, text = cli("score", str(runs[0]), "--attempts", str(runs[1]), str(runs[2]),
                         "--questions", str(kept),
                         "--judge-model", "judge-m", "--base-url", judge.url, "--backoff", "0")
        check("score", code, text)
    stage("calibrate", str(pool), "--runs", *map(str, runs))
    out = release if release is not None else root / "release"
    stage("select", str(pool), "--per-tier", str(PER_TIER), "--seed", str(SEED), "--out", str(out),
          "--name", NAME, "--revision", REVISION,
          "--readme", str(RELEASE_README), "--terms", str(RELEASE_TERMS))
    return Recipe(root, pool, corpus, blocked, kept, runs, out, lines, requests, plan)
