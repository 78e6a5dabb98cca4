"""An empty blocklist file is refused like one that matches nothing;
run.json and scores.json cite the release revision and the SQLite file's SHA-256 (cached by
size and mtime); ``score`` warns, and records, when a run was made without the release's
blocklist or with another one."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.chat import serve_fake
from drsearch.index import sha256_file

from .test_cli_blocking import _serve_cmd
from .test_cli_score import cli
from .test_release_blocklist_everywhere import QUESTIONS, root  # noqa: F401  (the release fixture)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


# -- an empty list hides nothing -----------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "# the leak pages, to be filled in\n\n"])
def test_an_empty_or_comments_only_blocklist_is_refused(sample_index: Path, tmp_path: Path, content: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text(content)
    for verb in (["search", "plague"], ["open", "--docid", "d-8b601c6f3f2c9567"], ["stats"]):
        rc, out = cli(verb[0], "--database", str(sample_index), "--blocked-docids", str(empty), *verb[1:])
        err = capsys.readouterr().err
        assert rc == 2 and out == "" and err.count("\n") == 1, (verb, err)
        assert "lists no docids" in err and "--blocked-docids none" in err
        rc, _ = cli(verb[0], "--database", str(sample_index), "--blocked-docids", "none", *verb[1:])
        assert rc == 0  # "no blocklist", meant and said
    rc, _ = cli("run", "--questions", str(QUESTIONS), "--database", str(sample_index), "--blocked-docids",
                str(empty), "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "r"))
    assert rc == 2 and "lists no docids" in capsys.readouterr().err and not (tmp_path / "r").exists()
    p = subprocess.run(_serve_cmd("--database", str(sample_index), "--blocked-docids", str(empty), "--port", "0"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "lists no docids" in p.stderr, p.stderr


# -- the SQLite file's SHA-256, once per file ----------------------------------------------------


def test_the_file_hash_is_cached_by_size_and_mtime(sample_index: Path, tmp_path: Path) -> None:
    from drsearch.index.filehash import cache_path, cached_sha256

    db = tmp_path / "c.sqlite3"
    db.write_bytes(sample_index.read_bytes())
    assert cached_sha256(db) == sha256_file(db)
    entries = json.loads(cache_path().read_text())
    entries[str(db.resolve())]["sha256"] = "f" * 64  # what a cache hit returns, unread
    cache_path().write_text(json.dumps(entries))
    assert cached_sha256(db) == "f" * 64
    st = db.stat()
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # the file changed: computed again
    assert cached_sha256(db) == sha256_file(db)


# -- run.json and scores.json --------------------------------------------------------------------


def _run(root: Path, out: Path, *extra: str) -> dict[str, Any]:  # noqa: F811
    with serve_fake({}) as fake:
        rc, text = cli("run", "--questions", str(root / "REL/benchmark/questions.jsonl"), "--database",
                       str(root / "REL"), *extra, "--model", "m", "--base-url", fake.url, "--out", str(out),
                       "--quiet", "--max-attempts", "1", "--limit", "3")
    assert rc == 0, text
    return dict(json.loads((out / "run.json").read_text()))


def _score(root: Path, run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:  # noqa: F811
    capsys.readouterr()
    rc, text = cli("score", str(run), "--questions", str(root / "REL/benchmark/questions.jsonl"),
                   "--judge", "numeric", "--quiet")
    assert rc == 0, text
    return json.loads((run / "scores.json").read_text())["corpus"], capsys.readouterr().err


def test_run_and_score_cite_the_release_and_the_file(root: Path, tmp_path: Path,  # noqa: F811
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    db, own = root / "REL/search/corpus.sqlite3", sha256_file(root / "REL/benchmark/blocked_docids.txt")
    manifest = _run(root, tmp_path / "run")
    assert manifest["release"] == {"name": "tiny", "revision": "r42"}
    assert manifest["database_sha256"] == sha256_file(db) and manifest["blocklist_origin"] == "release"
    assert manifest["database_bytes"] == db.stat().st_size
    assert manifest["blocklist_sha256"] == manifest["release_blocklist_sha256"] == own
    corpus, err = _score(root, tmp_path / "run", capsys)
    assert corpus["release"] == {"blocklist_sha256": own, "name": "tiny", "revision": "r42"}
    (run,) = corpus["runs"]
    assert run["database_sha256"] == sha256_file(db) and run["release"]["revision"] == "r42"
    assert run["corpus_identity"] == manifest["corpus_identity"]
    assert corpus["warnings"] == [] and "not the benchmark's" not in err


@pytest.mark.parametrize("how", ["none", "override"])
def test_score_warns_when_the_run_lacked_the_release_list(root: Path, tmp_path: Path, how: str,  # noqa: F811
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    extra = ["--blocked-docids", "none"]
    if how == "override":
        other = tmp_path / "other.txt"
        other.write_text((root / "REL/benchmark/blocked_docids.txt").read_text().splitlines()[-1] + "\n")
        extra = ["--blocked-docids", str(other), "--override-release-blocklist", "--allow-missing-blocked"]
    manifest = _run(root, tmp_path / "run", *extra)
    assert manifest["blocklist_origin"] == f"release-{how}"
    corpus, err = _score(root, tmp_path / "run", capsys)
    (warning,) = corpus["warnings"]
    assert warning in json.loads((tmp_path / "run" / "scores.json").read_text())["warnings"]
    assert ("without the release's blocklist" if how == "none" else "with another blocklist") in warning
    assert warning in err and err.count("not the benchmark's") == 1


def test_a_pinned_corpus_file_is_recognised_outside_its_release(tmp_path: Path) -> None:
    """A release's corpus copied out of its directory is still the pinned release's file:
    scores.json names the pin, and a run on it without a blocklist is warned about."""
    from drsearch.benchmark.datasets.dr256 import PinnedRelease
    from drsearch.benchmark.grade import RunEpisodes
    from drsearch.benchmark.provenance import NO_BLOCKLIST_SHA256, corpus_provenance

    pin = PinnedRelease(name="DR-X", revision="v9", questions_sha256="a" * 64, database_sha256="b" * 64,
                        database_bytes=4096, questions=1, tiers={})
    questions = tmp_path / "q.jsonl"
    questions.write_text("")
    bare = {"blocklist_count": 0, "blocklist_origin": "none", "blocklist_sha256": NO_BLOCKLIST_SHA256,
            "database_bytes": 4096, "database_sha256": "b" * 64, "release": None}
    runs = [RunEpisodes(tmp_path / "r0", bare, {}), RunEpisodes(tmp_path / "r1", {**bare, "database_bytes": 1}, {})]
    block = corpus_provenance(questions, "a" * 64, runs, pins=(pin,))
    assert block["release"] == {"blocklist_sha256": None, "name": "DR-X", "revision": "v9"}
    assert [r["pinned_release"] for r in block["runs"]] == [{"name": "DR-X", "revision": "v9"}, None]
    (warning,) = block["warnings"]
    assert warning.startswith(f"{tmp_path / 'r0'}: the run was made without any blocklist on a release's")
