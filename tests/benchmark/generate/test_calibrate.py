"""Calibration: the bucket rules on hand-made stats (boundaries stated), properties, and the
OpenBioRQ roster through `drsearch calibrate` on hand-written runs and grades."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drsearch.agents.canonical import sha256_hex
from drsearch.benchmark import GradedQuestion, write_graded
from drsearch.benchmark.generate.calibrate import (
    ItemStats,
    dr256_bucket,
    drbencher_bucket,
    frozen_core,
    item_stats,
    openbiorq_bucket,
)
from drsearch.tools.cli import main

from ...helpers import DATA

QUESTIONS = DATA / "sample/questions.jsonl"
ROWS = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]


def stats(outcomes: list[str], turns: float = 4.0, statuses: list[str] | None = None,
          answered: int | None = None, scores: list[float | None] | None = None) -> ItemStats:
    n = len(outcomes)
    statuses = statuses or ["answered"] * n
    return ItemStats(attempts=n, solved=sum(o == "correct" for o in outcomes),
                     answered=n if answered is None else answered, mean_turns=turns, outcomes=tuple(outcomes),
                     statuses=tuple(statuses), scores=tuple(scores or [None] * n))


def test_dr256_buckets() -> None:
    c, i = "correct", "incorrect"
    assert dr256_bucket(stats([c, c, c])) == ("excluded", "solved 3/3")
    assert dr256_bucket(stats([c, i, c])) == ("frontier", None)
    assert dr256_bucket(stats([i, c, i])) == ("frontier", None)
    assert dr256_bucket(stats([i, i, i])) == ("challenge", None)
    assert dr256_bucket(stats([i, i, i], turns=3.0)) == ("challenge", None)  # >= 3 turns: kept
    assert dr256_bucket(stats([i, i, i], turns=2.99)) == ("excluded", "mean turns 2.99 < 3")
    assert dr256_bucket(stats([i, i, i], statuses=["answered", "turn_cap", "answered"])) == \
        ("excluded", "rollout 1 not complete (turn_cap)")
    assert dr256_bucket(stats([i, "empty_answer", i], answered=2)) == ("excluded", "empty final answer in a rollout")
    assert dr256_bucket(stats([i, "judge_failed", i])) == ("excluded", "a rollout is not graded (judge_failed)")
    assert dr256_bucket(stats([i, i])) == ("excluded", "2 rollout(s), not 3")


def test_drbencher_boundary_is_strictly_greater() -> None:
    c, i = "correct", "incorrect"
    assert drbencher_bucket(stats([c] * 5 + [i] * 5)) == ("kept", None)  # accuracy exactly 0.5: kept
    assert drbencher_bucket(stats([c] * 6 + [i] * 4)) == ("discarded", "accuracy 6/10 > 0.5")
    assert drbencher_bucket(stats([c] * 10)) == ("discarded", "accuracy 10/10 > 0.5")
    assert drbencher_bucket(stats([i] * 10)) == ("kept", None)
    assert drbencher_bucket(stats([c] * 3 + [i] * 7), tau=0.3) == ("kept", None)
    assert drbencher_bucket(stats([c] * 4 + [i] * 6), tau=0.3)[0] == "discarded"
    # an unanswered or empty attempt is a failed one; a missing or unjudged one leaves accuracy undefined
    assert drbencher_bucket(stats([c] * 5 + ["unfinished"] * 5))[0] == "kept"
    assert drbencher_bucket(stats([c] * 9 + ["missing_episode"])) == \
        ("ungraded", "1 of 10 attempt(s) without a grade (missing_episode)")


def test_openbiorq_buckets_and_frozen_core() -> None:
    def one(score: float | None, outcome: str = "incorrect") -> ItemStats:
        return stats([outcome], scores=[score])

    assert openbiorq_bucket({"a": one(0.2), "b": one(0.49)}) == ("core", None)
    assert openbiorq_bucket({"a": one(0.5, "correct"), "b": one(0.9, "correct")}) == ("easy", None)  # >= 0.5
    assert openbiorq_bucket({"a": one(0.5, "correct"), "b": one(0.1)}) == ("discriminating", "solved by a")
    assert openbiorq_bucket({"a": one(None, "judge_failed"), "b": one(0.1)}) == ("ungraded", "a: judge_failed")
    assert openbiorq_bucket({"a": one(0.7)}, threshold=0.8) == ("core", None)
    assert frozen_core({"a": one(0.2), "b": one(0.0, "empty_answer")})
    assert not frozen_core({"a": one(0.2), "b": one(0.6, "correct")})
    assert not frozen_core({"a": one(None, "missing_episode"), "b": one(0.1)})  # not run: not shown to fail


@given(st.lists(st.sampled_from(["correct", "incorrect"]), min_size=1, max_size=20), st.floats(0.0, 1.0))
def test_drbencher_discards_exactly_above_tau(outcomes: list[str], tau: float) -> None:
    solved = outcomes.count("correct")
    bucket, _ = drbencher_bucket(stats(outcomes), tau=tau)
    assert (bucket == "discarded") == (solved / len(outcomes) > tau)


@given(st.lists(st.sampled_from(["correct", "incorrect", "empty_answer", "judge_failed"]), min_size=3, max_size=3),
       st.floats(0.0, 10.0))
def test_dr256_buckets_partition(outcomes: list[str], turns: float) -> None:
    s = stats(outcomes, turns=turns, answered=3 - outcomes.count("empty_answer"))
    bucket, reason = dr256_bucket(s)
    retained = turns >= 3 and all(o in ("correct", "incorrect") for o in outcomes)
    if not retained or s.solved == 3:
        assert bucket == "excluded" and reason
    else:
        assert bucket == ("challenge" if s.solved == 0 else "frontier") and reason is None


@given(st.lists(st.one_of(st.none(), st.floats(0.0, 1.0)), min_size=1, max_size=6))
def test_openbiorq_core_means_solved_by_none(scores: list[float | None]) -> None:
    roster = {f"m{i}": stats(["incorrect"], scores=[s]) for i, s in enumerate(scores)}
    bucket, _ = openbiorq_bucket(roster)
    solved = [s is not None and s >= 0.5 for s in scores]
    assert bucket == ("core" if not any(solved) else "easy" if all(solved) else "discriminating")


def test_item_stats_counts_turns_and_answers() -> None:
    episodes: list[dict[str, Any] | None] = [
        {"final_answer": "x", "status": "answered", "turns": [{}, {}, {}]},
        {"final_answer": "  ", "status": "answered", "turns": [{}]},
        None]
    s = item_stats(episodes, [None, None, None])
    assert (s.attempts, s.answered, s.mean_turns, s.statuses) == (3, 1, 2.0, ("answered", "answered", "missing"))
    assert s.outcomes == ("ungraded",) * 3 and not s.graded


# -- OpenBioRQ through the CLI: a roster of hand-written runs, graded records beside them -----

def write_model_run(root: Path, model: str, answers: dict[int, str], scores: dict[int, float],
                    temperature: float = 0.6) -> Path:
    root.mkdir(parents=True)
    manifest = {"blocklist_sha256": "b", "corpus_identity": "c", "model": model,
                "preset": {"seed_base": 20260811, "temperature": temperature},
                "questions_sha256": sha256_hex(QUESTIONS.read_bytes())}
    (root / "run.json").write_text(json.dumps(manifest))
    episodes = [{"final_answer": answers[i], "index": i, "qid": ROWS[i]["metadata"]["qid"], "status": "answered",
                 "turns": [{}, {}, {}]} for i in sorted(answers)]
    (root / "trajectories.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    graded = [GradedQuestion(question_id=ROWS[i]["metadata"]["qid"], index=i, episode_status="answered",
                             final_answer=answers[i], outcome="correct" if scores[i] >= 0.5 else "incorrect",
                             correct=scores[i] >= 0.5, score=scores[i]) for i in sorted(answers)]
    write_graded(root / "scores.graded.jsonl", graded)
    return root


def cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(argv), out=buf)
    return rc, buf.getvalue()


def test_openbiorq_roster_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers = {0: "a0", 1: "a1", 2: "a2", 3: "a3"}
    # item 0: solved by none; 1: by all; 2: by m1 only; 3: by none, but m2 solves it at temperature 0
    m1 = write_model_run(tmp_path / "m1", "m1", answers, {0: 0.1, 1: 0.9, 2: 0.5, 3: 0.0})
    m2 = write_model_run(tmp_path / "m2", "m2", answers, {0: 0.3, 1: 0.6, 2: 0.2, 3: 0.4})
    t1 = write_model_run(tmp_path / "t1", "m1", answers, {0: 0.1, 1: 0.9, 2: 0.5, 3: 0.0}, temperature=0)
    t2 = write_model_run(tmp_path / "t2", "m2", answers, {0: 0.2, 1: 0.6, 2: 0.2, 3: 0.5}, temperature=0)
    out = tmp_path / "cal.json"
    rc, text = cli("calibrate", "--questions", str(QUESTIONS), "--runs", str(m1), str(m2), "--rule", "openbiorq",
                   "--frozen-runs", str(t1), str(t2), "--out", str(out))
    assert rc == 0, text
    report = json.loads(out.read_text())
    items = {i["index"]: i for i in report["items"]}
    assert [items[i]["bucket"] for i in range(4)] == ["core", "easy", "discriminating", "core"]
    assert [items[i]["frozen_core"] for i in range(4)] == [True, None, None, False]
    assert report["counts"] == {"core": 2, "discriminating": 1, "easy": 1, "ungraded": 8, "frozen_core": 1}
    assert items[2]["reason"] == "solved by m1" and items[5]["reason"] == "m1: ungraded"

    capsys.readouterr()
    hot = write_model_run(tmp_path / "hot", "m2", answers, {0: 0.2, 1: 0.6, 2: 0.2, 3: 0.5})
    for argv, message in [
        (["--runs", str(m1), str(m1 / "."), "--frozen-runs", str(t1)], "the same run given twice"),
        (["--runs", str(m1), str(t1)], "model 'm1' is in the roster twice"),
        (["--runs", str(m1), str(m2), "--frozen-runs", str(t1), str(hot)], "must be at temperature 0"),
        (["--runs", str(m1), str(m2), "--frozen-runs", str(t1)], "are not the roster"),
        (["--runs", str(m1), str(m2), "--grades", str(m1)], "give one per roster run (2), got 1"),
    ]:
        bad = tmp_path / "bad.json"
        rc, _ = cli("calibrate", "--questions", str(QUESTIONS), "--rule", "openbiorq", "--out", str(bad), *argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and not bad.exists() and len(err) == 1 and message in err[0], (message, err)
