"""This repository is a release too: its data matches manifest.json, its demo questions
(data/sample) are answered by the articles they cite, and the sample release (the
construction recipe's output on data/construct, as ``make sample-release`` makes it)
validates (fast and --deep) through the real ``drsearch`` console script, on every test run."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from offline_recipe.driver import Recipe
from offline_recipe.fixture import BLOCKED, PAGES, REFERENCE_AGENT, UPSTREAM

from drsearch.corpus import stable_docid
from drsearch.index import BlockList
from drsearch.release.dr256 import load_questions, normalise_question
from drsearch.release.repo_data import SAMPLE_RELEASE, data_manifest, data_manifest_problems

from ..helpers import DATA, REPO, sample_docs
from .construct_fixture import multihop_qids


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


def test_the_sample_release_is_the_recipes_output(pristine_release: Path, sample_recipe: Recipe) -> None:
    """The sample release is what the construction recipe selects from data/construct (the
    numbers docs/RELEASE.md and docs/CONSTRUCT.md show), not a hand-made file."""
    manifest = json.loads((pristine_release / "manifest.json").read_text())
    assert (manifest["release"]["name"], manifest["release"]["revision"]) == ("drsearch-sample", "2.0.0")
    assert manifest["counts"] == {"blocked_docids": 1, "calibration_tiers": {"challenge": 2, "frontier": 2},
                                  "chunks": 75, "difficulty": {"3": 4}, "documents": 55, "questions": 4}
    selected = load_questions(pristine_release / "benchmark" / "questions.jsonl")
    assert {r.metadata.qid for r in selected.rows} <= set(multihop_qids())  # the audit's survivors only
    assert (pristine_release / "benchmark" / "questions.jsonl").read_bytes() == \
        (sample_recipe.pool / "select" / "questions.jsonl").read_bytes()
    assert (pristine_release / "benchmark" / "blocked_docids.txt").read_bytes() == \
        (REPO / str(SAMPLE_RELEASE["blocked_docids"])).read_bytes()
    # the inputs manifest.json names are the ones the recipe reads
    assert tuple(
        REPO / str(SAMPLE_RELEASE[k]) for k in ("upstream", "pages", "blocked_docids", "reference_agent")) == (UPSTREAM, PAGES, BLOCKED, REFERENCE_AGENT)
    assert all(path.is_file() for path in (UPSTREAM, PAGES, BLOCKED, REFERENCE_AGENT))
    for row in selected.rows:
        assert row.metadata.benchmark.base_pilot["model"] == "drsearch-offline-scripted-reference-agent"
    # docs/RELEASE.md and docs/CONSTRUCT.md say so, with these counts
    counts = manifest["counts"]
    lines = len((pristine_release / "checksums.sha256").read_text().splitlines())
    for doc in ("RELEASE.md", "CONSTRUCT.md"):
        text = " ".join((REPO / "docs" / doc).read_text(encoding="utf-8").replace("**", "").split())
        assert "sample release is th" in text and "recipe's output" in text, doc
        for shown in ("`drsearch-sample` 2.0.0", f"{counts['questions']} questions (2 `frontier`, 2 `challenge`",
                      f"{counts['documents']} documents ({counts['chunks']} chunks)",
                      f"{counts['blocked_docids']} blocked docid", f"{lines} files in `checksums.sha256`"):
            assert shown in text, (doc, shown)


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils sha256sum")
def test_checksums_verify_with_sha256sum(pristine_release: Path) -> None:
    p = subprocess.run(["sha256sum", "--check", "--strict", "checksums.sha256"], cwd=pristine_release,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(": OK") == 24


def test_assemble_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    out = tmp_path / "rel"
    code = drsearch("release", "assemble", "--docs", str(DATA / "sample/docs.jsonl"), "--questions",
                    str(DATA / "sample/questions.jsonl"), "--blocked-docids", str(DATA / "sample/blocked_docids.txt"),
                    "--out", str(out), "--name", "drsearch-sample", "--revision", "1.0.0", "--quiet")
    assert code.returncode == 0, code.stderr
    again = drsearch("release", "assemble", "--docs", str(DATA / "sample/docs.jsonl"), "--questions",
                     str(DATA / "sample/questions.jsonl"), "--blocked-docids",
                     str(DATA / "sample/blocked_docids.txt"), "--out", str(out), "--name", "x", "--revision", "1")
    assert again.returncode == 2 and "not empty" in again.stderr and "Traceback" not in again.stderr
