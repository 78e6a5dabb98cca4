"""`drsearch run --shard I/N` and `drsearch run merge`: the sample questions run unsharded and
as 3 shards with a scripted model; the merged run scores as the unsharded one (numeric judge);
merges of shards that do not make one run are refused with one line, exit 2."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents.shards import shard_of
from drsearch.dev.chat import serve_fake
from drsearch.index import build
from drsearch.tools.cli import main

from .conftest import BLOCKED, QUESTIONS

ROWS = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
QIDS = [r["metadata"]["qid"] for r in ROWS]
# answers the numeric judge grades correct (0, 1, 6) and wrong (8, 11); the rest answer-INDEX
SCRIPTS: dict[int, list[dict[str, Any]]] = {
    0: [{"call": [("search", {"query": "QUESTION", "k": 2})]}, {"content": "30"}],
    1: [{"content": "about 28.5"}], 6: [{"content": "30154"}],
    8: [{"content": "It is 65 percent, up from 60"}], 11: [{"content": "Final answer: 14.3"}],
}


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv), out=out)
    return rc, out.getvalue(), err.getvalue()


def run(out: Path, url: str, index: Path, *extra: str, questions: Path = QUESTIONS, model: str = "fake",
        rc: int = 0) -> None:
    got, stdout, err = cli("run", "--questions", str(questions), "--database", str(index), "--model", model,
                           "--base-url", url, "--out", str(out), "--quiet", "--json", "--concurrency", "3",
                           "--max-attempts", "2", "--backoff", "0.01", *extra)
    assert got == rc, (stdout, err)


@pytest.fixture(scope="module")
def runs(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("shards")
    with serve_fake(SCRIPTS) as fake:
        run(tmp / "full", fake.url, sample_index)
        for i in range(3):
            run(tmp / f"s{i}", fake.url, sample_index, "--shard", f"{i}/3")
    return tmp


def test_shards_partition_the_questions_by_a_hash_of_the_qid(runs: Path) -> None:
    got = {}
    for i in range(3):
        manifest = json.loads((runs / f"s{i}" / "run.json").read_text())
        shard = manifest["shard"]
        assert (shard["index"], shard["count"]) == (i, 3)
        qids = [json.loads(line)["qid"] for line in (runs / f"s{i}" / "trajectories.jsonl").read_text().splitlines()]
        assert qids == shard["qids"]
        got[i] = set(qids)
    assert sorted(q for s in got.values() for q in s) == sorted(QIDS)  # disjoint, and all of them
    assert all(got.values()), "each shard answers some of the 12 sample questions"
    for i, qids in got.items():  # the rule, spelled out: the same on any machine
        assert all(int.from_bytes(hashlib.sha256(q.encode()).digest()[:8], "big") % 3 == i for q in qids)
    assert "shard" not in json.loads((runs / "full" / "run.json").read_text())  # unsharded: as before


def test_the_merged_run_scores_as_the_unsharded_run(runs: Path) -> None:
    merged = runs / "merged"
    rc, out, err = cli("run", "merge", *(str(runs / f"s{i}") for i in (2, 0, 1)), "--out", str(merged))
    assert rc == 0 and out.startswith("merged 3 shards, 12 episodes"), err
    assert (merged / "trajectories.jsonl").read_bytes() == (runs / "full" / "trajectories.jsonl").read_bytes()
    outcomes = {}
    for run_dir in (runs / "full", merged):
        assert cli("score", str(run_dir), "--questions", str(QUESTIONS), "--judge", "numeric")[0] == 0
        scores = json.loads((run_dir / "scores.json").read_text())
        graded = [json.loads(line) for line in (run_dir / "scores.graded.jsonl").read_text().splitlines()]
        outcomes[run_dir.name] = (scores["accuracy"], {g["question_id"]: g["outcome"] for g in graded})
    assert outcomes["merged"] == outcomes["full"]
    accuracy, per_question = outcomes["full"]
    assert accuracy["count"] == 3 and len(per_question) == 12


def refused(*argv: str) -> str:
    rc, _, err = cli(*argv)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (rc, err)
    return err


def test_merges_that_are_not_one_run_are_refused(runs: Path, sample_index: Path, tmp_path: Path) -> None:
    s = [str(runs / f"s{i}") for i in range(3)]
    out = str(tmp_path / "m")
    assert "missing shard(s) 2/3" in refused("run", "merge", s[0], s[1], "--out", out)
    assert "overlapping shards" in refused("run", "merge", s[0], s[1], s[1], s[2], "--out", out)
    assert "not a shard" in refused("run", "merge", s[0], s[1], str(runs / "full"), "--out", out)
    fewer = tmp_path / "fewer.jsonl"
    fewer.write_text("".join(line + "\n" for line in QUESTIONS.read_text().splitlines()[:11]))
    other_corpus = tmp_path / "other.sqlite3"
    build([{"docid": "x", "url": "https://example.org/x", "title": "x", "text": "plague rats fleas"}], other_corpus)
    with serve_fake(SCRIPTS) as fake:
        cases = {"model": dict(model="other-model"), "questions file": dict(questions=fewer),
                 "blocklist": dict(extra=("--blocked-docids", str(BLOCKED))),
                 "preset": dict(extra=("--preset", "closed-book")), "corpus": dict(index=other_corpus, rc=1)}
        for words, case in cases.items():
            other = tmp_path / words.replace(" ", "-")
            run(other, fake.url, case.get("index", sample_index), "--shard", "2/3", *case.get("extra", ()),
                questions=case.get("questions", QUESTIONS), model=case.get("model", "fake"),
                rc=case.get("rc", 0))  # the one-document corpus: no hit to open, infra errors
            err = refused("run", "merge", s[0], s[1], str(other), "--out", out)
            assert f"its {words} differs" in err, err
    assert not Path(out).exists()  # nothing written by a refused merge
    Path(out).mkdir()
    (Path(out) / "keep.txt").write_text("mine")
    assert "not an empty directory" in refused("run", "merge", *s, "--out", out)
    assert (Path(out) / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("value", ["3/3", "1", "-1/3", "a/b", "0/0"])
def test_a_bad_shard_is_one_line_exit_2(value: str, sample_index: Path, tmp_path: Path) -> None:
    err = refused("run", "--questions", str(QUESTIONS), "--database", str(sample_index), "--model", "m",
                  "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "o"), f"--shard={value}")
    assert "--shard" in err and not (tmp_path / "o").exists()


def test_shard_of_is_stable() -> None:
    assert [shard_of(q, 3) for q in ("a", "b", "c")] == [
        int.from_bytes(hashlib.sha256(q.encode()).digest()[:8], "big") % 3 for q in "abc"]
