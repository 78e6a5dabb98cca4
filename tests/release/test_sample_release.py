"""This repository is a release too: its data matches manifest.json, its sample questions
are answered by the articles they cite, and the sample release built from it validates
(fast and --deep) through the real ``drsearch`` console script, on every test run."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from drsearch.corpus import stable_docid
from drsearch.index import BlockList
from drsearch.release.dr256 import load_questions, normalise_question
from drsearch.release.repo_data import (
    SAMPLE_RELEASE,
    assemble_sample_release,
    data_manifest,
    data_manifest_problems,
)

from ..helpers import DATA, REPO, sample_docs


def drsearch(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=300)


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def test_shipped_data_matches_the_repository_manifest() -> None:
    assert data_manifest_problems(REPO) == []
    recorded = json.loads((REPO / "manifest.json").read_text())
    assert recorded == data_manifest(REPO)  # regenerating it changes nothing
    roles = {f["path"]: f["role"] for f in recorded["files"]}
    assert roles["data/sample/docs.jsonl"] == "sample_corpus" and roles["data/sample/LICENSE"] == "licence"
    assert recorded["sample_release"] == SAMPLE_RELEASE


def test_sample_answers_are_stated_in_the_cited_articles() -> None:
    docs = {d["docid"]: d for d in sample_docs()}
    qs = load_questions(DATA / "sample/questions.jsonl")
    for row in qs.rows:
        cited = row.metadata.benchmark.clean_provenance_answer_docids
        assert cited, row.metadata.qid
        for docid in cited:
            assert squash(row.label) in squash(docs[docid]["text"]), (row.metadata.qid, docid)
        user = [m.content for m in row.prompt if m.role == "user"]
        assert user == [f"Question: {row.metadata.question}\nAnswer:"]
        digest = hashlib.sha256(normalise_question(row.metadata.question).encode()).hexdigest()
        assert row.metadata.qid == "q-" + digest[:16]


def test_sample_blocklist_holds_the_leak_artifacts_not_the_answer_documents() -> None:
    """DR-256 blocks dataset dumps and QA pages; each question's independent answer document
    stays searchable. So: every label is in an unblocked document, every blocked page is a
    project-written artifact giving away a question with its answer, and no answer
    document is blocked."""
    docs = {d["docid"]: d for d in sample_docs()}
    qs = load_questions(DATA / "sample/questions.jsonl")
    blocked = BlockList.from_file(DATA / "sample/blocked_docids.txt")
    assert len(blocked) == 3 and blocked.docids <= docs.keys()
    assert not blocked.docids & qs.answer_docids
    for row in qs.rows:
        assert any(squash(row.label) in squash(d["text"]) for docid, d in docs.items() if docid not in blocked)
    leaked: set[int] = set()
    for docid in blocked.docids:
        page = docs[docid]
        assert page["source_id"].startswith("drsearch-leak-artifact:"), docid
        gives_away = {r.metadata.benchmark.index for r in qs.rows
                      if squash(r.metadata.question) in squash(page["text"]) and squash(r.label) in squash(page["text"])}
        assert gives_away, docid
        leaked |= gives_away
    assert leaked == set(range(12))  # together the artifacts leak every sample question
    artifacts = {d for d, page in docs.items() if page["source_id"].startswith("drsearch-leak-artifact:")}
    assert artifacts == blocked.docids
    assert {d["docid"] for d in docs.values()} == {stable_docid(d["url"]) for d in docs.values()}  # one scheme


def test_sample_release_validates_fast_and_deep_with_the_console_script(pristine_release: Path) -> None:
    fast = drsearch("validate", "--release-dir", str(pristine_release))
    assert fast.returncode == 0, fast.stdout + fast.stderr
    assert "FAIL" not in fast.stdout and "validate: PASS" in fast.stdout
    deep = drsearch("validate", "--release-dir", str(pristine_release), "--deep", "--json")
    assert deep.returncode == 0, deep.stdout + deep.stderr
    report = json.loads(deep.stdout)
    assert report["ok"] and report["mode"] == "deep" and report["failed"] == report["warnings"] == 0
    names = {c["name"] for c in report["checks"]}
    assert {"corpus sha256", "corpus quick_check", "corpus fts5 integrity", "pinned identity"} <= names


def test_sample_release_is_deterministic(pristine_release: Path, tmp_path: Path) -> None:
    again = assemble_sample_release(REPO, tmp_path / "again")
    for name in ("manifest.json", "checksums.sha256", "benchmark/summary.json", "search/corpus.sqlite3",
                 "search/coverage_summary.json", "search/source_manifest_summary.json"):
        assert (tmp_path / "again" / name).read_bytes() == (pristine_release / name).read_bytes(), name
    assert again.counts["questions"] == 12 and again.counts["documents"] == 184


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils sha256sum")
def test_checksums_verify_with_sha256sum(pristine_release: Path) -> None:
    p = subprocess.run(["sha256sum", "--check", "--strict", "checksums.sha256"], cwd=pristine_release,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(": OK") == 7


def test_assemble_refuses_a_non_empty_directory(pristine_release: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel"
    code = drsearch("release", "assemble", "--docs", str(DATA / "sample/docs.jsonl"), "--questions",
                    str(DATA / "sample/questions.jsonl"), "--blocked-docids", str(DATA / "sample/blocked_docids.txt"),
                    "--out", str(out), "--name", "drsearch-sample", "--revision", "1.0.0", "--quiet")
    assert code.returncode == 0, code.stderr
    assert (out / "manifest.json").read_bytes() == (pristine_release / "manifest.json").read_bytes()
    again = drsearch("release", "assemble", "--docs", str(DATA / "sample/docs.jsonl"), "--questions",
                     str(DATA / "sample/questions.jsonl"), "--blocked-docids",
                     str(DATA / "sample/blocked_docids.txt"), "--out", str(out), "--name", "x", "--revision", "1")
    assert again.returncode == 2 and "not empty" in again.stderr and "Traceback" not in again.stderr
