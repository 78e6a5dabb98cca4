"""build: canonical URLs, exact-duplicate merging with aliases, stable docids, reports that add up."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from drsearch.contract import BuildError, InvalidInputError
from drsearch.corpus import (
    COVERAGE_FILE,
    SOURCES_FILE,
    build_corpus,
    coverage_problems,
    deduplicate,
    stable_docid,
)
from drsearch.index import Engine

from .conftest import Crawled


def test_reports_add_up_from_url_list_to_index(crawled: Crawled) -> None:
    cov = json.loads((crawled.corpus.parent / COVERAGE_FILE).read_text())
    src = json.loads((crawled.corpus.parent / SOURCES_FILE).read_text())
    assert coverage_problems(cov, src) == []
    listed = crawled.summary["urls"]
    assert cov["url_records"] == listed
    assert cov["url_records"] == cov["fetched_ok"] + cov["failed"] + cov["robots_disallowed"]
    assert cov["fetched_ok"] == cov["extracted"] + cov["extraction_empty"] + cov["skipped"]
    assert cov["extracted"] == cov["input_documents"]
    assert cov["input_documents"] == cov["rejected_documents"] + cov["duplicates"] + cov["documents"]
    assert cov["documents"] == cov["indexed_documents"] + cov["empty_documents"]
    assert cov["failed_by_reason"] == {"http_404": 1, "http_503": 1, "timeout": 1, "too_large": 2,
                                       "too_many_redirects": 1}
    assert cov["robots_disallowed"] == 3 and cov["duplicates"] == 2 and cov["malformed_url_lines"] == 5
    assert sum(h["records"] for h in src["hosts"].values()) == cov["url_records"]
    assert sum(h["documents"] for h in src["hosts"].values()) == cov["documents"] == src["documents"]
    assert src["content_types"]["application/pdf"] == 1
    with Engine.open(crawled.corpus) as engine:
        stats = engine.stats()
    assert stats["documents"] == cov["documents"] and stats["chunks"] == cov["chunks"]


def test_duplicate_page_under_two_urls_is_one_document_open_by_either(crawled: Crawled) -> None:
    site = crawled.server.site
    original = next(u for u, b in site.pages.items() if b == site.pages[site.real_allowed])
    with Engine.open(crawled.corpus) as engine:
        a = engine.open_document(url=original)
        b = engine.open_document(url="https://mirror.test/copy")
        old = engine.open_document(url="https://redirect.test/old")  # redirects to /new: same text
        new = engine.open_document(url="https://redirect.test/new")
    assert a.docid == b.docid == stable_docid(min(original, "https://mirror.test/copy"))
    assert old.docid == new.docid == stable_docid("https://redirect.test/new")


def _lines(docs: list[object]) -> list[tuple[str, object]]:
    return [(f"docs.jsonl:{i}", d) for i, d in enumerate(docs, 1)]


def test_docids_and_aliases_do_not_depend_on_input_order() -> None:
    docs = [{"url": f"https://h{i % 3}.test/p/{i}?utm_source=x", "title": "t", "text": f"text {i % 7}"}
            for i in range(40)]
    first = deduplicate(_lines(docs)).documents
    random.Random(1).shuffle(docs)
    assert deduplicate(_lines(docs)).documents == first
    assert len(first) == 7
    assert all(d["docid"] == stable_docid(d["url"]) for d in first)


def test_bad_document_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    good = {"url": "https://a.test/1", "title": "One", "text": "some words here"}
    docs.write_text("\n".join([
        json.dumps(good), "[1, 2, 3]", "{broken", json.dumps({"url": "https://a.test/2", "text": "  "}),
        json.dumps({"url": "https://a.test/3"}), json.dumps({"text": "no url"}),
        json.dumps({"url": "https://A.test/1#frag", "text": "other words"}),  # same canonical URL
        json.dumps({**good, "url": "https://a.test/1/"}),  # same page, another spelling
    ]) + "\n")
    out = tmp_path / "out" / "c.sqlite3"
    out.parent.mkdir()
    result = build_corpus(docs, out)
    c = result.coverage
    assert c["rejected_by_reason"] == {"conflicting_url": 1, "no_text": 2, "no_url": 1, "not_an_object": 1,
                                       "not_json": 1}
    assert c["documents"] == 1 and c["duplicates"] == 1 and c["input_documents"] == 8
    assert "url_records" not in c  # no extract report: no fetch counts to claim
    assert coverage_problems(c, result.sources) == []
    assert any(":2:" in r.message and "JSON object" in r.message for r in result.rejected)


def test_existing_output_and_unusable_input_lose_nothing(tmp_path: Path) -> None:
    out = tmp_path / "c.sqlite3"
    out.write_bytes(b"precious")
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"url": "https://a.test/", "text": "words"}) + "\n")
    with pytest.raises(BuildError, match="already exists"):
        build_corpus(docs, out)
    assert out.read_bytes() == b"precious"
    docs.write_text("[]\n")
    with pytest.raises(InvalidInputError, match="no valid document"):
        build_corpus(docs, tmp_path / "d.sqlite3")
    with pytest.raises(InvalidInputError, match="cannot read"):
        build_corpus(tmp_path / "missing.jsonl", tmp_path / "e.sqlite3")
    assert not (tmp_path / COVERAGE_FILE).exists()


def test_same_inputs_give_byte_identical_corpus_and_reports(crawled: Crawled, tmp_path: Path) -> None:
    out = tmp_path / "corpus.sqlite3"
    again = build_corpus(crawled.docs, out)
    assert again.report.content_identity == crawled.build.report.content_identity
    assert out.read_bytes() == crawled.corpus.read_bytes()
    for name in (COVERAGE_FILE, SOURCES_FILE):
        assert (tmp_path / name).read_bytes() == (crawled.corpus.parent / name).read_bytes()
