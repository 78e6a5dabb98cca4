"""``drsearch corpus extract|build`` on the bundled sample crawl, and their error messages."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from drsearch.index import BlockList, missing_docids
from drsearch.release.dr256 import load_questions
from drsearch.tools.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_extract_then_build_the_bundled_sample_crawl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    docs, corpus = tmp_path / "docs.jsonl", tmp_path / "corpus.sqlite3"
    assert main(["corpus", "extract", str(REPO / "data/sample/crawl"), "--out", str(docs), "--quiet"], out) == 0
    assert main(["corpus", "build", str(docs), "--out", str(corpus), "--quiet"], out) == 0
    assert "extracted 184 documents" in out.getvalue() and "184 documents" in out.getvalue()
    cov = json.loads((tmp_path / "coverage_summary.json").read_text())
    assert cov["url_records"] == cov["documents"] == 184
    search = io.StringIO()
    assert main(["search", "--database", str(corpus), "--k", "3", "video game streaming subscription"], search) == 0
    assert "  1. " in search.getvalue() and "  3. " in search.getvalue()
    # `make demo`'s corpus and the sample benchmark name the same pages: the blocklist matches
    # all its docids there, and every question's answer documents are in it.
    blocked = BlockList.from_file(REPO / "data/sample/blocked_docids.txt")
    stats = io.StringIO()
    assert main(["stats", "--database", str(corpus), "--blocked-docids", str(REPO / "data/sample/blocked_docids.txt"),
                 "--json"], stats) == 0
    assert json.loads(stats.getvalue())["blocklist"] | {"sha256": ""} == {"count": 3, "matched": 3, "sha256": ""}
    assert missing_docids(corpus, blocked.docids) == []
    answers = load_questions(REPO / "data/sample/questions.jsonl").answer_docids
    assert len(answers) == 16 and missing_docids(corpus, answers) == []
    assert {json.loads(line)["docid"] for line in docs.read_text().splitlines()} == {
        json.loads(line)["docid"] for line in (REPO / "data/sample/docs.jsonl").read_text().splitlines()}


def test_cli_errors_are_one_line_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["corpus", "extract", str(tmp_path / "nope"), "--out", str(tmp_path / "d.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a crawl directory" in err
    (tmp_path / "urls.txt").write_text("ftp://x.test/y\n")
    assert main(["corpus", "fetch", "--urls", str(tmp_path / "urls.txt"), "--out", str(tmp_path / "c"),
                 "--quiet"], io.StringIO()) == 0
    assert "urls.txt:1: scheme must be http or https" in capsys.readouterr().err
