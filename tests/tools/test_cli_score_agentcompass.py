"""DeepSearchQA graded as AgentCompass grades it (its harness: judging protocol, record fields,
accuracy definitions): an unparseable judge reply is kept, a judge that is the model under test
is warned about, and AgentCompass's accuracy over validly scored tasks is reported beside ours
over all tasks, each named for what it is. A real scripted judge on 127.0.0.1."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from drsearch.benchmark.judges import RAW_REPLY_CHARS
from drsearch.dev.judge import serve_judge
from drsearch.tools.cli import main

from .test_cli_score import DSQA_TASKS, episode_record, write_run

GIBBERISH = "I think it is fine, mostly. <no json here>"


def score(run: Path, questions: Path, judge_model: str, url: str, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["score", str(run), "--dataset", "deepsearchqa", "--questions", str(questions),
                   "--judge-model", judge_model, "--base-url", url, "--parse-attempts", "2", *extra], out=out)
    return rc, out.getvalue(), err.getvalue()


def _run(tmp_path: Path) -> tuple[Path, Path]:
    questions = tmp_path / "dsqa.jsonl"
    questions.write_text("".join(json.dumps(t) + "\n" for t in DSQA_TASKS))
    run = write_run(tmp_path / "run", [
        episode_record("d0", 0, "answered", "Jupiter and Saturn"),  # correct
        episode_record("d1", 1, "answered", "Paris (GIBBERISH)"),  # the judge's reply never parses
        episode_record("d2", 2, "answered", " "),  # empty: a valid score of 0 (no judge)
        episode_record("d3", 3, "answered", "Neon and Krypton"),  # incorrect
        # d4: no episode
    ])
    return run, questions


RULES = [("GIBBERISH", [GIBBERISH])]


def test_an_unparseable_judge_reply_is_kept_in_the_verdict(tmp_path: Path) -> None:
    run, questions = _run(tmp_path)
    with serve_judge(RULES) as fake:
        rc, _, err = score(run, questions, "judge-m", fake.url)
    assert rc == 0, err
    graded = {g["question_id"]: g for g in map(json.loads, (run / "scores.graded.jsonl").read_text().splitlines())}
    assert graded["d1"]["outcome"] == "judge_failed"
    assert graded["d1"]["judge"]["raw_response"] == GIBBERISH
    assert "raw_response" not in graded["d0"]["judge"]  # a parsed reply is its verdict
    # re-grading from the judge cache keeps it too (nothing asked)
    with serve_judge(RULES) as fake:
        rc, _, _ = score(run, questions, "judge-m", fake.url, "--out", str(tmp_path / "again.json"))
        assert fake.requests == []
    again = {g["question_id"]: g for g in map(json.loads, (tmp_path / "again.graded.jsonl").read_text().splitlines())}
    assert again["d1"]["judge"]["raw_response"] == GIBBERISH
    assert RAW_REPLY_CHARS >= 4096


def test_accuracy_over_valid_scores_is_reported_beside_accuracy_over_all(tmp_path: Path) -> None:
    run, questions = _run(tmp_path)
    with serve_judge(RULES) as fake:
        rc, table, err = score(run, questions, "judge-m", fake.url)
    assert rc == 0, err
    scores = json.loads((run / "scores.json").read_text())
    assert (scores["accuracy"]["count"], scores["accuracy"]["n"]) == (1, 5)  # ours: every task
    valid = scores["accuracy_over_valid_scores"]  # AgentCompass: d1 (judge failed), d4 (no episode) left out
    assert (valid["count"], valid["n"], valid["rate"]) == (1, 3, round(1 / 3, 6))
    assert valid["left_out"] == {"judge_failed": 1, "missing": 0, "missing_episode": 1}
    assert "AgentCompass" in valid["definition"]
    assert "over all questions" in table and "(1/3) over validly scored tasks (AgentCompass)" in table
    assert "warnings" not in scores and scores["grading"]["judge_is_agent_model"] is False
    assert "warning" not in err


def test_a_judge_that_is_the_model_under_test_is_warned_about(tmp_path: Path) -> None:
    run, questions = _run(tmp_path)  # run.json: "model": "agent-m"
    for spelled in ("agent-m", "Org/Agent-M"):
        with serve_judge(RULES) as fake:
            rc, _, err = score(run, questions, spelled, fake.url, "--out", str(tmp_path / "self.json"))
        assert rc == 0
        assert err.count("drsearch: warning: the judge model") == 1 and "is the model under test" in err
        scores = json.loads((tmp_path / "self.json").read_text())
        assert scores["grading"]["judge_is_agent_model"] is True
        assert len(scores["warnings"]) == 1 and "is the model under test" in scores["warnings"][0]
