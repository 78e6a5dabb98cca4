"""Grounding articles from Wikipedia (drbencher/wikipedia.py, ``drsearch generate drbencher
articles``) against a local stand-in of the MediaWiki Action API (drsearch.dev.mediawiki): the
articles of a generation's entities, checked by their Wikidata item, fetched through ``drsearch
corpus fetch``'s client (robots.txt, the crawl directory as cache), and usable as the config's
``articles``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from drsearch.benchmark.generate.drbencher.wikipedia import fetch_articles, generation_entities, parse_article
from drsearch.dev.mediawiki import serve_mediawiki

from ....helpers import DATA, REPO
from .kgserver import CLI

ENTITIES = [{"label": "Zugspitze", "qid": "Q3375"}, {"label": "Mount Everest", "qid": "Q513"},
            {"label": "vienna", "qid": "Q1741"}, {"label": "Munich", "qid": "Q999999"},
            {"label": "Atlantis", "qid": "Q424242"}]


def gen_dir(tmp_path: Path) -> Path:
    d = tmp_path / "gen"
    d.mkdir()
    (d / "entities.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ENTITIES))
    (d / "gold.jsonl").write_text(json.dumps({"entities": [ENTITIES[0], {"label": "Berlin", "qid": "Q64"}]}) + "\n")
    return d


def test_articles_of_a_generation_checked_by_wikidata_item_and_cached(tmp_path: Path) -> None:
    gen = gen_dir(tmp_path)
    assert generation_entities(gen) == [("Q64", "Berlin"), ("Q513", "Mount Everest"), ("Q1741", "vienna"),
                                        ("Q3375", "Zugspitze"), ("Q424242", "Atlantis"), ("Q999999", "Munich")]
    with serve_mediawiki(DATA / "kg/docs.jsonl", redirects={"Everest": "Mount Everest"}) as wiki:
        out = tmp_path / "articles.jsonl"
        result = fetch_articles(generation_entities(gen), wiki.api, out, tmp_path / "crawl")
        first = len(wiki.requests)
        again = fetch_articles(generation_entities(gen), wiki.api, tmp_path / "again.jsonl", tmp_path / "crawl")
        assert len(wiki.requests) == first  # the crawl directory answered: nothing asked twice
    assert first == 1 + 6  # robots.txt once, then one request per entity
    assert result["skipped"] == {"Q424242": "no_article",
                                 "Q999999": "wrong_article (Munich is Q1726)"}  # the label named another item
    assert again["articles"] == result["articles"] == 4
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["qid"] for r in rows] == ["Q64", "Q513", "Q1741", "Q3375"]
    docs = {json.loads(line)["qid"]: json.loads(line) for line in (DATA / "kg/docs.jsonl").read_text().splitlines()}
    vienna = rows[2]
    assert vienna == {"docid": "wiki-Q1741", "qid": "Q1741", "text": docs["Q1741"]["text"], "title": "Vienna",
                      "url": wiki.url + "/wiki/Vienna"}  # "vienna" normalised to the page's title
    assert out.read_bytes() == (tmp_path / "again.jsonl").read_bytes()


def test_robots_txt_is_honoured(tmp_path: Path) -> None:
    gen = gen_dir(tmp_path)
    with serve_mediawiki(DATA / "kg/docs.jsonl", robots="User-agent: *\nDisallow: /w/\n") as wiki:
        result = fetch_articles(generation_entities(gen), wiki.api, tmp_path / "a.jsonl", tmp_path / "crawl")
        assert wiki.requests == ["/robots.txt"]
    assert result["articles"] == 0 and set(result["skipped"].values()) == {"robots_disallowed"}


def test_a_non_mediawiki_answer_is_skipped_with_its_reason() -> None:
    assert parse_article(b"<html>", "Q1") == (None, "not_mediawiki_json")
    assert parse_article(json.dumps({"query": {"pages": [{"title": "X", "extract": "t"}]}}).encode(), "Q1") == \
        (None, "wrong_article (X is no Wikidata item)")


def test_the_cli_verb_writes_an_articles_file_a_config_takes(tmp_path: Path) -> None:
    gen = gen_dir(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with serve_mediawiki(DATA / "kg/docs.jsonl") as wiki:
        done = subprocess.run([*CLI, "generate", "drbencher", "articles", str(gen), "--api", wiki.api,
                               "--out", str(tmp_path / "articles.jsonl"), "--json"],
                              env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["articles"] == 4 and (gen / "wikipedia-crawl").is_dir()
    from drsearch.benchmark.generate.drbencher.config import load_config
    config = json.loads((DATA / "kg/gen.json").read_text())
    config["articles"] = str(tmp_path / "articles.jsonl")
    (tmp_path / "gen.json").write_text(json.dumps(config))
    assert load_config(tmp_path / "gen.json")[1] == tmp_path / "articles.jsonl"
    for argv, says in ((["--api", "ftp://x"], "--api"), ([], "no such file")):
        bad = subprocess.run([*CLI, "generate", "drbencher", "articles", str(tmp_path / "nothing"), *argv,
                              "--out", str(tmp_path / "x.jsonl")], env=env, capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and says in bad.stderr, bad.stderr
