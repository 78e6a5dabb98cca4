"""`drsearch compare RUN_A RUN_B --majority`: the majority-vote McNemar between two
runs of 3 attempts each, driven through the real CLI on numerically graded runs and
cross-checked against statsmodels; bad input exits 2 with one line."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from drsearch.tools.cli import main

from ..helpers import DATA
from .test_cli_score import cli, episode_record, write_run

TEMPLATE = json.loads((DATA / "sample/questions.jsonl").read_text().splitlines()[0])
N = 14
QIDS = [f"q-majority-{i:02d}" for i in range(N)]
GOLD = [str(100 + 7 * i) for i in range(N)]

# Per question, the correctness of attempts 0, 1, 2 in run A and in run B. Majorities:
# A right and B wrong on q00-q05 (6), B right and A wrong on q06 (1), both right on q07-q09,
# both wrong on q10-q13; the attempts inside a majority differ, so a vote of attempt 0 alone
# would give another table.
PATTERN_A = ["111", "110", "101", "011", "110", "101", "100", "111", "011", "110", "000", "100", "010", "001"]
PATTERN_B = ["000", "100", "001", "010", "100", "000", "110", "101", "111", "011", "001", "000", "100", "010"]


def write_questions(path: Path) -> Path:
    rows = []
    for i, (qid, gold) in enumerate(zip(QIDS, GOLD, strict=True)):
        row = copy.deepcopy(TEMPLATE)
        row["label"] = gold
        row["metadata"]["qid"] = qid
        row["metadata"]["benchmark"]["index"] = i
        rows.append(json.dumps(row, sort_keys=True))
    path.write_text("\n".join(rows) + "\n")
    return path


def write_attempts(root: Path, pattern: list[str], attempts: int = 3) -> Path:
    """``root/attempt-N/`` runs answering the gold (1) or a wrong number (0) per the pattern."""
    for n in range(attempts):
        write_run(root / f"attempt-{n}",
                  [episode_record(qid, i, "answered", gold if pattern[i][n] == "1" else "1")
                   for i, (qid, gold) in enumerate(zip(QIDS, GOLD, strict=True))],
                  seed_base=1000 * (n + 1))
    return root


def grade(root: Path, questions: Path, *extra: str) -> None:
    rc, text = cli("score", str(root), "--questions", str(questions), "--judge", "numeric", *extra)
    assert rc == 0, text


def majority(pattern: str) -> bool:
    return pattern.count("1") >= 2


def test_majority_mcnemar_of_two_runs_matches_statsmodels(tmp_path: Path) -> None:
    questions = write_questions(tmp_path / "questions.jsonl")
    a = write_attempts(tmp_path / "A", PATTERN_A)
    b = write_attempts(tmp_path / "B", PATTERN_B)
    grade(a, questions)
    grade(b, questions)
    rc, text = cli("compare", str(a), str(b), "--majority", "--json")
    assert rc == 0, text
    result = json.loads(text)
    maj_a, maj_b = [majority(p) for p in PATTERN_A], [majority(p) for p in PATTERN_B]
    table = [[sum(x and y for x, y in zip(maj_a, maj_b, strict=True)),
              sum(x and not y for x, y in zip(maj_a, maj_b, strict=True))],
             [sum(y and not x for x, y in zip(maj_a, maj_b, strict=True)),
              sum(not x and not y for x, y in zip(maj_a, maj_b, strict=True))]]
    assert table == [[3, 6], [1, 4]]  # the pattern's design
    assert (result["both_correct"], result["a_only"], result["b_only"], result["both_incorrect"]) == (3, 6, 1, 4)
    assert result["p"] == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-12)
    assert result["n"] == N and result["attempts"] == 3
    assert result["accuracy_a"] == {"correct": 9, "rate": 9 / N}
    assert result["flips"] == {"correct_to_incorrect": QIDS[:6], "incorrect_to_correct": [QIDS[6]]}
    # not the attempt-0 comparison: that one pairs only the first attempts
    rc, plain = cli("compare", str(a), str(b), "--json")
    assert rc == 0 and json.loads(plain)["table"]["a_only"] != result["a_only"]
    # the text report carries the same numbers; the JSON is byte-identical on a rerun
    rc, report = cli("compare", str(a), str(b), "--majority")
    assert rc == 0 and f"majority-vote exact McNemar p = {result['p']}" in report
    assert "correct -> incorrect (6): " + " ".join(QIDS[:6]) in report
    assert cli("compare", str(a), str(b), "--majority", "--json")[1] == text


def test_majority_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    questions = write_questions(tmp_path / "questions.jsonl")
    a = write_attempts(tmp_path / "A", PATTERN_A)
    grade(a, questions)
    other = write_attempts(tmp_path / "other", PATTERN_B)  # graded over fewer questions
    grade(other, questions, "--ids", *QIDS[:10])
    two = write_attempts(tmp_path / "two", PATTERN_B, attempts=2)  # 2 attempts per question
    grade(two, questions)
    single = tmp_path / "single"  # one run: attempt 0 only
    write_run(single, [episode_record(q, i, "answered", g) for i, (q, g) in enumerate(zip(QIDS, GOLD, strict=True))])
    grade(single, questions)
    capsys.readouterr()
    for argv, message in [
        (["compare", str(a), str(other), "--majority"],
         "the runs grade different questions: 4 only in A (e.g. q-majority-10)"),
        (["compare", str(two), str(a), "--majority"],
         "q-majority-00: run A has attempt(s) 0, 1; the majority vote needs exactly 3 attempts"),
        (["compare", str(a), str(single), "--majority"], "q-majority-00: run B has attempt(s) 0;"),
        (["score", str(a), "--questions", str(questions), "--judge", "numeric", "--majority"],
         "--majority goes with --compare RUN_A RUN_B"),
    ]:
        rc = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and message in err[0], (argv, err)
