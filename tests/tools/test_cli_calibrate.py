"""End to end: `drsearch run --attempt 0/1/2` (attempt-aware fake model, a real `drsearch serve`
of the sample corpus) → `drsearch score` (fake judge, and the numeric judge) → `drsearch calibrate`."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents.canonical import sha256_hex
from drsearch.dev.chat import ScriptKey, serve_fake
from drsearch.dev.judge import serve_judge
from drsearch.tools.cli import main

from ..agents.conftest import search_server  # noqa: F401  (a real `drsearch serve` of the sample corpus)
from ..helpers import DATA

QUESTIONS = DATA / "sample/questions.jsonl"
ROWS = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
QIDS = [r["metadata"]["qid"] for r in ROWS]
RUN_INDEXES = [0, 1, 6, 8, 11]


def three_turns(final: str) -> list[dict[str, Any]]:
    return [{"call": [("search", {"query": "QUESTION", "k": 3})]}, {"open_first_hit": True}, {"content": final}]


SCRIPTS: dict[ScriptKey, list[dict[str, Any]]] = {
    0: three_turns("30"),  # solved by every attempt in 3 turns
    (0, 1): three_turns("28"),  # solved by attempt 0 only (attempts 1, 2: the default script, wrong)
    # 6: the default script every time (search, open, "answer-6"): never solved
    8: [{"content": "65 percent"}],  # solved at once: 1 turn
    (0, 11): three_turns("14"), (1, 11): three_turns("14.2"), (2, 11): three_turns(""),  # an empty rollout
}


def cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(argv), out=buf)
    return rc, buf.getvalue()


@pytest.fixture(scope="module")
def rollouts(search_server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    root = tmp_path_factory.mktemp("calibrate") / "rollouts"
    with serve_fake(SCRIPTS) as fake:
        for attempt in range(3):
            rc, text = cli("run", "--questions", str(QUESTIONS), "--search", search_server, "--model", "agent-m",
                           "--base-url", fake.url, "--out", str(root / f"attempt-{attempt}"), "--quiet",
                           "--attempt", str(attempt), "--max-attempts", "1",
                           "--ids", *[QIDS[i] for i in RUN_INDEXES])
            assert rc == 0, text
    with serve_judge([]) as judge:  # the oracle: correct iff the answer is the label
        rc, text = cli("score", str(root), "--questions", str(QUESTIONS), "--judge-model", "judge-m",
                       "--base-url", judge.url, "--backoff", "0")
    assert rc == 0, text
    rc, text = cli("score", str(root), "--questions", str(QUESTIONS), "--judge", "numeric",
                   "--out", str(root / "numeric.json"))
    assert rc == 0, text
    return root


def by_qid(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["qid"]: item for item in report["items"]}


def test_dr256_buckets_from_three_real_rollouts(rollouts: Path, tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    rc, text = cli("calibrate", "--questions", str(QUESTIONS), "--runs", str(rollouts), "--rule", "dr256",
                   "--out", str(out))
    assert rc == 0, text
    report = json.loads(out.read_text())
    assert report["counts"] == {"frontier": 1, "challenge": 1, "excluded": 10}
    items = by_qid(report)
    assert (items[QIDS[1]]["bucket"], items[QIDS[6]]["bucket"]) == ("frontier", "challenge")
    assert items[QIDS[0]]["reason"] == "solved 3/3"
    assert items[QIDS[8]]["reason"] == "mean turns 1 < 3"
    assert items[QIDS[11]]["reason"] == "empty final answer in a rollout"
    assert items[QIDS[2]]["reason"] == "rollout 0 not complete (missing)"
    stats = items[QIDS[1]]["models"]["agent-m"]
    assert stats == {"accuracy": 1 / 3, "answered": 3, "attempts": 3, "mean_turns": 3.0,
                     "outcomes": ["correct", "incorrect", "incorrect"], "scores": [None, None, None],
                     "solved": 1, "statuses": ["answered"] * 3}
    assert report["questions_sha256"] == sha256_hex(QUESTIONS.read_bytes())
    assert report["intervals"]["frontier"]["count"] == 1 and report["intervals"]["frontier"]["n"] == 12
    assert "frontier" in text and "95% Wilson" in text
    # the same inputs give the same bytes; A0 A1 A2 is the same as ROOT (grades from ROOT)
    again = tmp_path / "again.json"
    attempts = [str(rollouts / f"attempt-{i}") for i in range(3)]
    rc, _ = cli("calibrate", "--questions", str(QUESTIONS), "--runs", *attempts, "--rule", "dr256",
                "--grades", str(rollouts / "scores.json"), "--out", str(again))
    assert rc == 0
    assert json.loads(again.read_text())["items"] == report["items"]
    as_json = tmp_path / "as-json.json"
    rc, line = cli("calibrate", "--questions", str(QUESTIONS), "--runs", str(rollouts), "--rule", "dr256",
                   "--out", str(as_json), "--json")
    assert rc == 0 and json.loads(line) == json.loads(as_json.read_text()) and line.count("\n") == 1


def test_drbencher_v2_with_the_numeric_grader(rollouts: Path, tmp_path: Path) -> None:
    out = tmp_path / "v2.json"
    rc, text = cli("calibrate", "--questions", str(QUESTIONS), "--runs", str(rollouts), "--rule", "drbencher-v2",
                   "--k", "3", "--grades", str(rollouts / "numeric.json"), "--out", str(out))
    assert rc == 0, text
    report = json.loads(out.read_text())
    assert report["counts"] == {"kept": 2, "discarded": 3, "ungraded": 7}
    items = by_qid(report)
    # 14 and 14.2 (1.4 % off) are both right for the numeric grader: 2/3 > 0.5
    assert items[QIDS[11]]["models"]["agent-m"]["solved"] == 2 and items[QIDS[11]]["bucket"] == "discarded"
    assert items[QIDS[1]]["bucket"] == "kept" and items[QIDS[6]]["bucket"] == "kept"
    assert report["settings"] == {"k": 3, "tau": 0.5}
    graded = [json.loads(line) for line in (rollouts / "numeric.graded.jsonl").read_text().splitlines()]
    assert all(g["judge"]["version"] == "numeric-v2" and g["judge"]["tolerance"] == 0.02
               for g in graded if g["judge"] is not None)
    scores = json.loads((rollouts / "numeric.json").read_text())
    assert scores["grading"]["judge_model"] == "numeric" and scores["grading"]["numeric"]["tolerance"] == 0.02


# -- bad input: one line, exit 2, nothing written -------------------------------------------

def refused(capsys: pytest.CaptureFixture[str], out: Path, *argv: str, questions: Path = QUESTIONS) -> str:
    capsys.readouterr()
    rc, _ = cli("calibrate", "--questions", str(questions), "--out", str(out), *argv)
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists(), err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("drsearch: error: "), err
    return lines[0]


def copy_runs(rollouts: Path, dst: Path) -> Path:
    shutil.copytree(rollouts, dst, ignore=shutil.ignore_patterns("*.sqlite3"))
    return dst


def edit_manifest(run: Path, **fields: Any) -> None:
    manifest = json.loads((run / "run.json").read_text())
    manifest.update(fields)
    (run / "run.json").write_text(json.dumps(manifest))


def test_bad_input(rollouts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.json"
    a = [str(rollouts / f"attempt-{i}") for i in range(3)]
    assert "unknown rule" in refused(capsys, out, "--runs", str(rollouts), "--rule", "dr999")
    assert "no such run directory" in refused(capsys, out, "--runs", a[0], a[1], str(tmp_path / "attempt-2"),
                                              "--rule", "dr256")
    assert "not a run directory" in refused(capsys, out, "--runs", str(tmp_path), "--rule", "dr256")
    assert "needs 3 attempt runs, got 2" in refused(capsys, out, "--runs", a[0], a[1], "--rule", "dr256")
    assert "needs 10 attempt runs, got 3 (or pass --k 3)" in refused(capsys, out, "--runs", str(rollouts),
                                                                     "--rule", "drbencher-v2")
    assert "the same run given twice" in refused(capsys, out, "--runs", a[0], a[0] + "/.", a[1], "--rule", "dr256")
    same = tmp_path / "same-seeds"
    for i in range(3):  # three copies of attempt 0: the grades are there, the seeds are one
        shutil.copytree(a[0], same / f"attempt-{i}", ignore=shutil.ignore_patterns("*.sqlite3"))
    shutil.copy(rollouts / "scores.graded.jsonl", same)
    assert "ran with the same seeds" in refused(capsys, out, "--runs", str(same), "--rule", "dr256")
    other = tmp_path / "other.jsonl"
    other.write_text(QUESTIONS.read_text() + "\n")
    assert "answered another questions file" in refused(capsys, out, "--runs", str(rollouts), "--rule", "dr256",
                                                        questions=other)
    closed = copy_runs(rollouts, tmp_path / "closed-book")  # recorded as closed-book runs
    for i in range(3):
        run_json = json.loads((closed / f"attempt-{i}/run.json").read_text())
        edit_manifest(closed / f"attempt-{i}", preset={**run_json["preset"], "tools": []})
    no_grades = refused(capsys, out, "--runs", str(closed), "--rule", "drbencher-v1", "--k", "3", "--grades",
                        str(tmp_path / "none.json"))  # no grades there: refused for that, before anything is written
    assert "none.graded.jsonl: no graded questions" in no_grades, no_grades

    for field in ("corpus_identity", "blocklist_sha256"):
        copy = copy_runs(rollouts, tmp_path / f"copy-{field}")
        edit_manifest(copy / "attempt-2", **{field: "something-else"})
        assert f"attempt-2: {field} 'something-else' differs" in refused(capsys, out, "--runs", str(copy),
                                                                         "--rule", "dr256")
    tools = copy_runs(rollouts, tmp_path / "tools")
    edit_manifest(tools / "attempt-1", preset={**json.loads((tools / "attempt-1/run.json").read_text())["preset"],
                                               "tools": ["search", "open"]})
    assert "drbencher-v1 needs closed-book runs" in refused(capsys, out, "--runs", str(tools),
                                                            "--rule", "drbencher-v1", "--k", "3")
    ungraded = copy_runs(rollouts, tmp_path / "ungraded")
    (ungraded / "scores.graded.jsonl").unlink()
    assert "no graded questions there" in refused(capsys, out, "--runs", str(ungraded), "--rule", "dr256")
    # grades of other answers (an attempt re-run after grading) are not these runs' grades
    regraded = copy_runs(rollouts, tmp_path / "regraded")
    path = regraded / "attempt-0/trajectories.jsonl"
    path.write_text(path.read_text().replace('"final_answer":"30"', '"final_answer":"31"'))
    assert "are of another answer" in refused(capsys, out, "--runs", str(regraded), "--rule", "dr256")
    assert "--frozen-runs is for --rule openbiorq" in refused(capsys, out, "--runs", str(rollouts), "--rule",
                                                              "dr256", "--frozen-runs", a[0])
