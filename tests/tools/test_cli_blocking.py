"""A blocklist never silently matches nothing: every verb that applies one refuses a list
whose docids are not all in the corpus (exit 2, one line) unless --allow-missing-blocked;
``stats`` reports how many are listed and matched; a release's own blocklist is applied by
default when its database is served."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from offline_recipe.fixture import DISTRACTORS

from drsearch.corpus import stable_docid
from drsearch.dev.judge import serve_judge
from drsearch.index import sha256_file
from drsearch.server import ServeProcess

from ..helpers import DATA
from .test_cli_score import BIO_CHECKLIST, cli, episode_record, write_run

QUESTIONS = DATA / "sample/questions.jsonl"
LEGACY = ["web-358cc4a080456476", "web-359fee228518d55b", "web-360c732d1fdbfc68"]  # the old sample scheme


@pytest.fixture()
def stale(tmp_path: Path) -> Path:
    """A blocklist written for another docid scheme: none of its docids is in the sample corpus."""
    f = tmp_path / "stale.txt"
    f.write_text("# the sample's answer pages under the old web- scheme\n" + "\n".join(LEGACY) + "\n")
    return f


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("verb", [["search", "plague"], ["open", "--docid", "d-8b601c6f3f2c9567"]])
def test_search_and_open_refuse_a_blocklist_that_matches_nothing(sample_index: Path, stale: Path, verb: list[str],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    rc, _ = cli(verb[0], "--database", str(sample_index), "--blocked-docids", str(stale), *verb[1:])
    assert rc == 2
    err = one_error_line(capsys)
    assert f"3 blocked docids listed, 0 in this corpus: {', '.join(LEGACY)}" in err
    assert "--allow-missing-blocked" in err
    rc, _ = cli(verb[0], "--database", str(sample_index), "--blocked-docids", str(stale), *verb[1:],
                "--allow-missing-blocked")
    assert rc == 0


def test_a_partly_matching_blocklist_is_refused_too(sample_index: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "partial.txt"
    f.write_text((DATA / "sample/blocked_docids.txt").read_text() + "d-0000000000000000\n")
    rc, _ = cli("search", "--database", str(sample_index), "--blocked-docids", str(f), "plague")
    assert rc == 2 and "4 blocked docids listed, 3 in this corpus: d-0000000000000000 (" in one_error_line(capsys)


def test_stats_reports_listed_and_matched(sample_index: Path, stale: Path) -> None:
    rc, out = cli("stats", "--database", str(sample_index), "--blocked-docids", str(stale), "--json")
    assert rc == 0
    assert json.loads(out)["blocklist"] | {"sha256": ""} == {"count": 3, "matched": 0, "sha256": ""}
    rc, out = cli("stats", "--database", str(sample_index), "--blocked-docids", str(DATA / "sample/blocked_docids.txt"))
    assert rc == 0 and '"count":3' in out.replace(" ", "") and '"matched":3' in out.replace(" ", "")


def test_run_refuses_before_writing_anything(sample_index: Path, stale: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    rc, _ = cli("run", "--questions", str(QUESTIONS), "--database", str(sample_index), "--blocked-docids", str(stale),
                "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--out", str(out), "--quiet")
    assert rc == 2 and "3 blocked docids listed, 0 in this corpus" in one_error_line(capsys)
    assert not out.exists()


def test_score_citation_audit_refuses_it(sample_index: Path, stale: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    questions = tmp_path / "bio.jsonl"
    questions.write_text(json.dumps({"task_id": "src0#0", "question": "Does drug 0 work?", "track": "clinical",
                                     "checklist": BIO_CHECKLIST}) + "\n")
    run = write_run(tmp_path / "run", [episode_record("src0#0", 0, "answered", "The dose. d-8b601c6f3f2c9567")])
    with serve_judge() as fake:
        args = ["score", str(run), "--dataset", "openbiorq", "--questions", str(questions), "--judge-model", "j",
                "--base-url", fake.url, "--audit-citations", "--database", str(sample_index),
                "--blocked-docids", str(stale), "--out", str(tmp_path / "s.json")]
        rc, _ = cli(*args)
        assert rc == 2 and "3 blocked docids listed, 0 in this corpus" in one_error_line(capsys)
        rc, text = cli(*args, "--allow-missing-blocked")
        assert rc == 0, text


# -- serve ---------------------------------------------------------------------------------


def _serve_cmd(*args: str) -> list[str]:
    exe = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))
    return [exe, "serve", *args]


@contextmanager
def serving(tmp_path: Path, *args: str) -> Iterator[tuple[dict[str, Any], Path, str]]:
    """Start `drsearch serve --database DB ARGS` on a free port (``args`` start with
    ``--database DB``); yield its /health body, log and base URL."""
    assert args[0] == "--database", args
    log = tmp_path / f"serve-{len(list(tmp_path.glob('serve-*.log')))}.log"
    with ServeProcess(args[1], *args[2:], log=log) as server:
        yield httpx.get(server.url + "/health", timeout=10).json(), log, server.url


def test_serve_refuses_a_blocklist_that_matches_nothing(sample_index: Path, stale: Path) -> None:
    p = subprocess.run(_serve_cmd("--database", str(sample_index), "--blocked-docids", str(stale), "--port", "0"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "3 blocked docids listed, 0 in this corpus" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_serving_a_release_applies_its_own_blocklist_by_default(release: Path, tmp_path: Path) -> None:
    db = str(release / "search" / "corpus.sqlite3")
    own = release / "benchmark" / "blocked_docids.txt"
    with serving(tmp_path, "--database", db) as (health, _, _base):
        assert health["blocklist"] == {"enabled": True, "sha256": sha256_file(own), "count": 1, "matched": 1,
                                       "origin": "release", "release_sha256": sha256_file(own)}
    same = tmp_path / "copy.txt"
    shutil.copyfile(own, same)  # the same bytes under another name is the release's list
    with serving(tmp_path, "--database", db, "--blocked-docids", str(same)) as (health, _, _base):
        assert health["blocklist"]["origin"] == "release" and health["blocklist"]["matched"] == 1


def test_serving_a_release_without_or_with_another_blocklist_is_explicit(release: Path, tmp_path: Path) -> None:
    db = str(release / "search" / "corpus.sqlite3")
    own_sha = sha256_file(release / "benchmark" / "blocked_docids.txt")
    other = tmp_path / "other.txt"
    other.write_text(f"{stable_docid(DISTRACTORS[0][0])}\n")  # a page of its corpus: a different list
    p = subprocess.run(_serve_cmd("--database", db, "--blocked-docids", str(other), "--port", "0"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "is not release" in p.stderr and "--override-release-blocklist" in p.stderr
    with serving(tmp_path, "--database", db, "--blocked-docids", str(other),
                 "--override-release-blocklist") as (health, log, _base):
        assert health["blocklist"] | {"sha256": ""} == {"enabled": True, "sha256": "", "count": 1, "matched": 1,
                                                        "origin": "release-override", "release_sha256": own_sha}
    assert "WARNING: --override-release-blocklist" in log.read_text()
    with serving(tmp_path, "--database", db, "--blocked-docids", "none") as (health, log, _base):
        assert health["blocklist"] | {"sha256": ""} == {"enabled": False, "sha256": "", "count": 0, "matched": 0,
                                                        "origin": "release-none", "release_sha256": own_sha}
    assert "WITHOUT its blocklist" in log.read_text()


def test_run_and_score_refuse_a_server_whose_blocklist_matches_nothing(sample_index: Path, stale: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with serving(tmp_path, "--database", str(sample_index), "--blocked-docids", str(stale),
                 "--allow-missing-blocked") as (health, _, url):
        assert (health["blocklist"]["count"], health["blocklist"]["matched"]) == (3, 0)
        out = tmp_path / "run"
        rc, _ = cli("run", "--questions", str(QUESTIONS), "--search", url, "--model", "m",
                    "--base-url", "http://127.0.0.1:9/v1", "--out", str(out), "--quiet")
        assert rc == 2 and "serves a blocklist of 3 docids, 0 in its corpus" in one_error_line(capsys)
        assert not out.exists()
        questions = tmp_path / "bio.jsonl"
        questions.write_text(json.dumps({"task_id": "src0#0", "question": "Does drug 0 work?",
                                         "track": "clinical", "checklist": BIO_CHECKLIST}) + "\n")
        run = write_run(tmp_path / "scored", [episode_record("src0#0", 0, "answered", "d-8b601c6f3f2c9567")])
        with serve_judge() as fake:
            rc, _ = cli("score", str(run), "--dataset", "openbiorq", "--questions", str(questions),
                        "--judge-model", "j", "--base-url", fake.url, "--audit-citations", "--search", url,
                        "--out", str(tmp_path / "s.json"))
        assert rc == 2 and "serves a blocklist of 3 docids, 0 in its corpus" in one_error_line(capsys)
        assert not (tmp_path / "s.json").exists()


def test_answer_documents_stay_openable_and_artifacts_do_not(sample_index: Path) -> None:
    """With the sample blocklist applied, every question's answer document opens and the leak
    artifacts answer exactly like absent documents."""
    from drsearch.contract import DocumentNotFoundError
    from drsearch.index import BlockList, Engine
    from drsearch.release.dr256 import load_questions

    blocked = BlockList.from_file(DATA / "sample/blocked_docids.txt")
    qs = load_questions(QUESTIONS)
    with Engine.open(sample_index, blocked) as engine:
        engine.check_blocklist_complete()
        for docid in sorted(qs.answer_docids):
            assert engine.open_document(docid=docid).docid == docid
        for docid in sorted(blocked.docids):
            with pytest.raises(DocumentNotFoundError):
                engine.open_document(docid=docid)
        for row in qs.rows:  # a search for the question never surfaces an artifact
            hits = engine.search(row.metadata.question, 10).hits
            assert not {h.docid for h in hits} & blocked.docids
            assert {h.docid for h in hits} & set(row.metadata.benchmark.clean_provenance_answer_docids)
