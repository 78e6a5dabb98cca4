"""`drsearch score --judge numeric`: no endpoint, verdicts with version and tolerance; bad options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drsearch.tools.cli import main

from ..helpers import DATA
from .test_cli_score import episode_record, write_run

QUESTIONS = DATA / "sample/questions.jsonl"
ROWS = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]


def test_numeric_scoring_of_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers = {0: "30", 1: "about 28.5", 6: "30154", 8: "It is 65 percent, up from 60", 11: "Final answer: 14.3"}
    run = write_run(tmp_path / "run", [episode_record(ROWS[i]["metadata"]["qid"], i, "answered", a)
                                       for i, a in answers.items()])
    assert main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric"]) == 0
    graded = {g["index"]: g for g in map(json.loads, (run / "scores.graded.jsonl").read_text().splitlines())}
    assert {i: graded[i]["outcome"] for i in answers} == {0: "correct", 1: "correct", 6: "correct",
                                                         8: "incorrect", 11: "incorrect"}  # 14.3: 2.1 % off
    assert graded[8]["reason"] == "answer: several numbers (2)"
    assert all(graded[i]["judge"]["tolerance"] == 0.02 and graded[i]["judge"]["version"] == "numeric-v1"
               for i in answers)
    scores = json.loads((run / "scores.json").read_text())
    assert scores["accuracy"]["count"] == 3 and scores["grading"]["prompt"] == "numeric-v1"
    # a wider tolerance is another grading, recorded as such
    out = tmp_path / "wide.json"
    assert main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric", "--tolerance", "0.05",
                 "--out", str(out)]) == 0
    wide = json.loads(out.read_text())
    assert wide["accuracy"]["count"] == 4 and wide["grading"]["numeric"]["tolerance"] == 0.05
    assert wide["grading"]["prompt_sha256"] != scores["grading"]["prompt_sha256"]

    capsys.readouterr()
    for extra, message in [(["--judge-model", "m"], "takes no --judge-model"),
                           (["--dataset", "openbiorq"], "not checklists")]:
        bad = tmp_path / "bad.json"
        rc = main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric", "--out", str(bad),
                   *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and not bad.exists() and len(err) == 1 and message in err[0], err
