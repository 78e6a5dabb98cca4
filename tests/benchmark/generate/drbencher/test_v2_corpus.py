"""The corpus V2 searches (drbencher/v2corpus.py): by default the questions' grounding articles
plus distractor pages that look like them, built into GEN_DIR/v2_corpus.sqlite3 and served by
a real ``drsearch serve``; or a corpus the config names (``v2.corpus``, a drsearch index, at
``v2.search_url`` or served by the stage; ``v2.search_url`` alone, any drsearch server), whose
identity is a stage setting, is checked against the server (exit 2 on a mismatch), and keys
the replay."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from drsearch.benchmark.generate.drbencher.v2corpus import distractor_candidates
from drsearch.dev.chat import Rule, serve_rules
from drsearch.dev.drbencher import MODEL, RULES
from drsearch.index import Engine
from drsearch.index.build import build as build_index
from drsearch.server import ServeProcess

from ....helpers import DATA
from ..test_stages import assert_same_tree
from .kgserver import kg_serve
from .test_kg_stages import generate, rows, write_config

TEMPLATES = ["pendulum_drift", "population_density", "date_difference"]
SEARCHER = "searcher"
DOCID = re.compile(r"^\[\d+\] docid: (\S+)$", re.MULTILINE)  # the agent's rendering of a hit


class Script:
    """A scripted V2 model: searches ``query`` (k 20), then opens the hit ``pick`` chooses
    among the docids the search returned, then gives up. It records what it saw."""

    def __init__(self, query: str, pick: Callable[[list[str]], str | None]) -> None:
        self.query, self.pick = query, pick
        self.found: list[list[str]] = []
        self.opened: list[str] = []
        self.read: list[str] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any] | str:
        messages = body["messages"]
        turn = sum(m["role"] == "assistant" for m in messages)
        if turn == 0:
            return _call("search", {"k": 20, "query": self.query})
        last = str(messages[-1].get("content") or "")
        if turn == 1:
            found = DOCID.findall(last)
            self.found.append(found)
            docid = self.pick(found)
            if docid is not None:
                self.opened.append(docid)
                return _call("open", {"docid": docid})
        elif turn == 2:
            self.read.append(last)
        return "I do not know."


def _call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"content": None, "role": "assistant", "tool_calls": [
        {"function": {"arguments": json.dumps(args), "name": name}, "id": "c0", "type": "function"}]}


SCRIPT = Script("", lambda found: None)


def scripted(body: dict[str, Any]) -> dict[str, Any] | str:
    return SCRIPT(body)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, Any]]:
    with kg_serve() as kg, serve_rules([Rule(SEARCHER, (), scripted), *RULES]) as llm:
        yield kg, llm


@pytest.fixture()
def script(monkeypatch: pytest.MonkeyPatch) -> Callable[[Script], Script]:
    def use(s: Script) -> Script:
        monkeypatch.setattr(SCRIPT, "__dict__", s.__dict__)
        return SCRIPT

    return use


def v2_config(tmp: Path, kg: str, llm_url: str, **v2: Any) -> Path:
    path = write_config(tmp, kg, templates=TEMPLATES,
                        generator={"base_url": llm_url, "model": MODEL, "seed": 7, "temperature": 0.0})
    config = json.loads(path.read_text())
    config["v2"] = {"enabled": True, "k": 1, "tau": 0.5, "model": {"base_url": llm_url, "model": SEARCHER}, **v2}
    path.write_text(json.dumps(config, indent=1))
    return path


def docids_of(database: Path) -> set[str]:
    """The documents of a drsearch index (read-only, straight from its table)."""
    with closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        return {str(r[0]) for r in db.execute("SELECT docid FROM documents")}


def assert_replays_offline(config: Path, out: Path, tmp: Path) -> None:
    """Run V2 again from ``out``'s replay cache into a fresh directory (no server needs to
    answer) and check that it writes ``out``'s files byte for byte."""
    cache = tmp / "cache.sqlite3"
    shutil.copy(out / "cache.sqlite3", cache)
    again = tmp / "again"
    rc, _, err = generate(config, again, "--until", "v2", "--cache-mode", "replay", "--cache", str(cache))
    assert rc == 0, err
    shutil.copy(cache, again / "cache.sqlite3")
    assert_same_tree(out, again)


def test_the_default_corpus_is_the_grounding_articles_plus_distractors_that_v2_finds(
        servers: tuple[str, Any], script: Callable[[Script], Script], tmp_path: Path) -> None:
    kg, llm = servers
    docs = {r["docid"]: r for r in rows(DATA / "kg/docs.jsonl")}
    s = script(Script("mountain country capital city river empire planet",
                      lambda found: next((d for d in found if d not in grounding), None)))
    grounding: set[str] = set()
    out = tmp_path / "gen"
    rc, _, err = generate(v2_config(tmp_path, kg, llm.url, distractors=6), out, "--until", "v1")
    assert rc == 0, err
    items = rows(out / "v1.jsonl")
    grounding |= {c["article_docid"] for c in items}
    rc, summary, err = generate(v2_config(tmp_path, kg, llm.url, distractors=6), out, "--until", "v2")
    assert rc == 0, err
    assert summary is not None and summary["ran"] == ["v2"]
    report = json.loads((out / "v2_corpus.json").read_text())
    assert report["kind"] == "default" and sorted(report["grounding"]) == sorted(grounding)
    distractors = [d["docid"] for d in report["distractors"]]
    assert len(distractors) == 6 == report["requested_distractors"] and not set(distractors) & grounding
    # look-alikes: another entity of a question's topic, or an entity on a question's chains
    looks = distractor_candidates(items, rows(out / "entities.jsonl"))
    assert all(looks[d["qid"]][0] == d["why"] and d["source"] == "articles" for d in report["distractors"])
    assert {d["why"] for d in report["distractors"]} <= {"same_topic", "one_hop", "two_hop"}
    assert not {d["qid"] for d in report["distractors"]} & {e["qid"] for c in items for e in c["entities"]}
    served = docids_of(out / "v2_corpus.sqlite3")
    assert served == grounding | set(distractors) and report["documents"] == len(served)
    # the support corpus of the clues is untouched: every article
    assert docids_of(out / "support.sqlite3") == set(docs)
    # the episodes searched the served V2 corpus and found and opened distractors
    assert s.found and all(set(f) <= served for f in s.found)
    assert s.opened and set(s.opened) <= set(distractors), (s.found, s.read)
    opened = s.opened[0]
    assert any(docs[opened]["text"][:40] in r for r in s.read)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stages"]["v2"]["settings"]["corpus"] == {"distractors": 6}


def test_the_distractor_choice_is_seeded_and_counted(servers: tuple[str, Any], script: Callable[[Script], Script],
                                                     tmp_path: Path) -> None:
    kg, llm = servers
    script(Script("Alps", lambda found: None))
    chosen = []
    for n, distractors in enumerate((3, 3, 0, 10_000)):
        out = tmp_path / f"gen{n}"
        rc, _, err = generate(v2_config(tmp_path, kg, llm.url, distractors=distractors), out, "--until", "v2")
        assert rc == 0, err
        chosen.append(json.loads((out / "v2_corpus.json").read_text()))
    assert chosen[0] == chosen[1] and len(chosen[0]["distractors"]) == 3  # same inputs, same pages
    assert chosen[2]["distractors"] == [] and chosen[2]["documents"] == len(chosen[2]["grounding"])
    # asked for more than there are: every candidate with an article, no more
    every = chosen[3]
    assert 3 < len(every["distractors"]) <= every["candidates"]
    assert [d["docid"] for d in chosen[0]["distractors"]] == [d["docid"] for d in every["distractors"]][:3]
    assert (tmp_path / "gen0/v2_corpus.sqlite3").read_bytes() == (tmp_path / "gen1/v2_corpus.sqlite3").read_bytes()


QUOKKA = {"docid": "atlas-quokka", "title": "Quokka Pass", "url": "https://atlas.example/quokka",
          "text": "The Quokka Pass is a mountain pass of the Western Alps at 2,417 metres."}


def named_db(tmp: Path, name: str, extra: list[dict[str, str]]) -> Path:
    db = tmp / name
    build_index([*({k: r[k] for k in ("docid", "title", "text", "url")} for r in rows(DATA / "kg/docs.jsonl")),
                 *extra], db)
    return db


def test_a_named_corpus_is_what_v2_searches_and_changing_it_reruns_v2(
        servers: tuple[str, Any], script: Callable[[Script], Script], tmp_path: Path) -> None:
    kg, llm = servers
    s = script(Script("Quokka Pass", lambda found: found[0] if found else None))
    (tmp_path / "corpora").mkdir()
    named_db(tmp_path / "corpora", "atlas.sqlite3", [QUOKKA])
    out = tmp_path / "gen"
    path = v2_config(tmp_path, kg, llm.url, corpus="corpora/atlas.sqlite3")  # relative to the config
    rc, summary, err = generate(path, out, "--until", "v2")
    assert rc == 0, err
    assert s.opened and set(s.opened) == {"atlas-quokka"}  # a document only that corpus has
    assert any("2,417 metres" in r for r in s.read)
    assert not (out / "v2_corpus.sqlite3").exists()
    report = json.loads((out / "v2_corpus.json").read_text())
    settings = json.loads((out / "manifest.json").read_text())["stages"]["v2"]["settings"]
    assert report["kind"] == "database" and settings["corpus"]["database"]["identity"] == report["identity"]
    assert "corpora" not in json.dumps(settings)  # the identity names it, not the path
    assert_replays_offline(path, out, tmp_path)  # record -> replay, every server down: byte-identical
    # the same corpus again: up to date; another corpus at the same path: V2 reruns against it
    rc, summary, err = generate(path, out, "--until", "v2")
    assert rc == 0 and summary is not None and summary["ran"] == [], err
    other = dict(QUOKKA, text="The Quokka Pass is a mountain pass of the Western Alps at 2,419 metres.")
    (tmp_path / "corpora/atlas.sqlite3").unlink()
    named_db(tmp_path / "corpora", "atlas.sqlite3", [other])
    rc, summary, err = generate(path, out, "--until", "v2")
    assert rc == 0 and summary is not None and summary["ran"] == ["v2"], err
    assert any("2,419 metres" in r for r in s.read)
    assert json.loads((out / "v2_corpus.json").read_text())["identity"] != report["identity"]


def test_a_server_of_the_named_corpus_is_searched_and_one_of_another_is_exit_2(
        servers: tuple[str, Any], script: Callable[[Script], Script], tmp_path: Path) -> None:
    kg, llm = servers
    script(Script("Quokka Pass", lambda found: found[0] if found else None))
    atlas = named_db(tmp_path, "atlas.sqlite3", [QUOKKA])
    plain = named_db(tmp_path, "plain.sqlite3", [])
    out = tmp_path / "gen"
    rc, _, err = generate(v2_config(tmp_path, kg, llm.url, corpus=str(atlas)), out, "--until", "v1")
    assert rc == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with ServeProcess(plain, log=tmp_path / "plain.log") as wrong:
        rc, _, err = generate(v2_config(tmp_path, kg, llm.url, corpus=str(atlas), search_url=wrong.url), out,
                              "--until", "v2")
    lines = err.splitlines()
    assert rc == 2 and "error:" in lines[-1] and all("warning: stage discover reuses" in x for x in lines[:-1]), err
    assert f"v2: {wrong.url} serves corpus " in lines[-1] and f"not the named corpus v2.corpus {atlas}" in lines[-1]
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before  # nothing lost, nothing new
    # the same corpus served with a blocklist is another identity: refused too
    blocked = tmp_path / "blocked.txt"
    blocked.write_text("atlas-quokka\n")
    with ServeProcess(atlas, "--blocked-docids", str(blocked), log=tmp_path / "blocked.log") as server:
        rc, _, err = generate(v2_config(tmp_path, kg, llm.url, corpus=str(atlas), search_url=server.url), out,
                              "--until", "v2")
    assert rc == 2 and "not the named corpus" in err.splitlines()[-1], err
    log = tmp_path / "atlas.log"
    with ServeProcess(atlas, "--access-log", log=log) as right:
        rc, summary, err = generate(v2_config(tmp_path, kg, llm.url, corpus=str(atlas), search_url=right.url), out,
                                    "--until", "v2")
    assert rc == 0 and summary is not None and summary["ran"] == ["v2"], err
    assert log.read_text().count('"POST /search HTTP/1.1" 200') >= 1


def test_a_search_url_alone_names_any_server_recorded_for_the_replay(
        servers: tuple[str, Any], script: Callable[[Script], Script], tmp_path: Path) -> None:
    kg, llm = servers
    s = script(Script("Quokka Pass", lambda found: found[0] if found else None))
    atlas = named_db(tmp_path, "atlas.sqlite3", [QUOKKA])
    out = tmp_path / "gen"
    with ServeProcess(atlas, log=tmp_path / "serve.log") as server:
        path = v2_config(tmp_path, kg, llm.url, search_url=server.url)
        rc, _, err = generate(path, out, "--until", "v2")
    assert rc == 0, err
    assert s.opened == ["atlas-quokka"] * len(s.opened) and s.opened
    report = json.loads((out / "v2_corpus.json").read_text())
    with Engine.open(atlas) as engine:
        assert report == {"kind": "server", "identity": engine.meta["content_identity"],
                          "blocklist_sha256": engine.blocklist.sha256, "retriever": None}
    assert_replays_offline(path, out, tmp_path)  # the server is down: its identity and answers from the cache


def test_distractors_missing_from_the_articles_file_are_fetched_from_wikipedia_and_replayed(
        servers: tuple[str, Any], script: Callable[[Script], Script], tmp_path: Path) -> None:
    """``v2.wikipedia_api``: a look-alike without an article in the config's ``articles`` is
    fetched through the Wikipedia fetcher (robots.txt once, the page checked by its Wikidata
    item) and recorded in the replay cache: the replay, with the stand-in down, fetches nothing."""
    from drsearch.dev.mediawiki import serve_mediawiki

    kg, llm = servers
    s = script(Script("Himalayas Karakoram", lambda found: "wiki-Q5451" if "wiki-Q5451" in found else None))
    removed = {"Q5451", "Q43512", "Q1374"}  # Himalayas (on Everest's chains), K2, the Matterhorn (mountains)
    articles = tmp_path / "articles.jsonl"
    articles.write_text("".join(json.dumps(r) + "\n" for r in rows(DATA / "kg/docs.jsonl")
                                if r["qid"] not in removed))
    with serve_mediawiki(DATA / "kg/docs.jsonl") as wiki:
        path = v2_config(tmp_path, kg, llm.url, distractors=10_000, wikipedia_api=wiki.api)
        config = json.loads(path.read_text())
        config["articles"] = str(articles)
        path.write_text(json.dumps(config))
        out = tmp_path / "gen"
        rc, _, err = generate(path, out, "--until", "v2")
        assert rc == 0, err
        asked = wiki.requests
    report = json.loads((out / "v2_corpus.json").read_text())
    fetched = {d["qid"]: d for d in report["distractors"] if d["source"] == "wikipedia"}
    assert set(fetched) == removed and fetched["Q5451"]["why"] == "one_hop"
    assert {d["docid"] for d in fetched.values()} == {"wiki-Q5451", "wiki-Q43512", "wiki-Q1374"}
    assert asked.count("/robots.txt") == 1 and len(asked) == 1 + len(fetched) + len(report["skipped"])
    assert report["skipped"] and set(report["skipped"].values()) == {"no_article"}  # e.g. Beijing: no page
    assert s.opened == ["wiki-Q5451"] * len(s.opened) and s.opened  # the episodes find a fetched page
    assert "wiki-Q5451" in docids_of(out / "v2_corpus.sqlite3")
    assert_replays_offline(path, out, tmp_path)


def test_a_named_corpus_that_is_missing_or_no_index_is_exit_2_before_anything_is_written(
        servers: tuple[str, Any], tmp_path: Path) -> None:
    kg, llm = servers
    (tmp_path / "notes.txt").write_text("not a database\n")
    for corpus, says in (("nowhere.sqlite3", f"v2.corpus {tmp_path / 'nowhere.sqlite3'}: no such file"),
                         ("notes.txt", f"v2.corpus {tmp_path / 'notes.txt'}: not a usable drsearch index")):
        out = tmp_path / "gen"
        rc, _, err = generate(v2_config(tmp_path, kg, llm.url, corpus=corpus), out)
        assert rc == 2 and err.count("\n") == 1 and says in err, err
        assert not out.exists()
