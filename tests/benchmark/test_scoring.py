"""Scoring on hand-computed fixtures: honest denominators, breakdowns, pairing, agreement."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
from pydantic import ValidationError
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import proportion_confint

from drsearch.benchmark.records import OUTCOMES, GradedQuestion, Outcome
from drsearch.benchmark.scoring import compare_runs, judge_agreement, render_table, summarize

STATUS = {"unfinished": "turn_cap", "agent_error": "error", "missing_episode": "missing"}


def gq(qid: str, outcome: Outcome, **fields: Any) -> GradedQuestion:
    fields.setdefault("index", int(re.sub(r"\D", "", qid) or 0))
    fields.setdefault("episode_status", STATUS.get(outcome, "final"))
    return GradedQuestion(question_id=qid, outcome=outcome, correct=outcome == "correct", **fields)


def wilson_ref(count: float, n: int) -> list[float]:
    low, high = proportion_confint(count, n, alpha=0.05, method="wilson")
    return [round(float(low), 6), round(float(high), 6)]


# Ten DR-256-style questions: q9 has no record at all (missing episode).
RUN_OUTCOMES: list[tuple[str, Outcome, str, str | None]] = [
    ("q0", "correct", "frontier", "sports"),
    ("q1", "correct", "frontier", None),
    ("q2", "incorrect", "frontier", "sports"),
    ("q3", "empty_answer", "frontier", None),
    ("q4", "unfinished", "frontier", None),
    ("q5", "correct", "challenge", "science"),
    ("q6", "incorrect", "challenge", None),
    ("q7", "agent_error", "challenge", None),
    ("q8", "judge_failed", "challenge", None),
]
EXPECTED = [f"q{i}" for i in range(10)]


def run_items() -> list[GradedQuestion]:
    return [
        gq(
            qid,
            outcome,
            tier=tier,
            category=category,
            tool_calls=i,
            prompt_tokens=100 * i,
            completion_tokens=10 * i,
            wall_s=1.5,
        )
        for i, (qid, outcome, tier, category) in enumerate(RUN_OUTCOMES)
    ]


# ---- records ----------------------------------------------------------------------------------------------


def test_record_enforces_correct_matches_outcome_and_score_range() -> None:
    with pytest.raises(ValidationError):
        GradedQuestion(question_id="q", index=0, episode_status="final", outcome="correct", correct=False)
    with pytest.raises(ValidationError):
        GradedQuestion(question_id="q", index=0, episode_status="final", outcome="judge_failed", correct=True)
    with pytest.raises(ValidationError):
        gq("q1", "correct", score=1.2)
    with pytest.raises(ValidationError):
        gq("q1", "correct", score=-0.01)
    with pytest.raises(ValidationError):
        gq("q1", "bogus")  # type: ignore[arg-type]
    record = gq("q1", "correct", score=1.0)
    with pytest.raises(ValidationError):
        record.outcome = "incorrect"
    assert OUTCOMES[0] == "correct" and len(OUTCOMES) == 8 and "missing" in OUTCOMES


# ---- summarize --------------------------------------------------------------------------------------------


def test_accuracy_is_over_all_expected_questions_and_every_count_is_shown() -> None:
    summary = summarize(run_items(), expected_ids=EXPECTED)
    assert summary["n"] == 10 and summary["n_graded"] == 9
    assert summary["accuracy"] == {"count": 3, "n": 10, "rate": 0.3, "ci": wilson_ref(3, 10)}
    assert summary["accuracy"]["ci"] == pytest.approx([0.1078, 0.6032], abs=5e-5)
    counts = {outcome: row["count"] for outcome, row in summary["outcomes"].items()}
    assert counts == {
        "correct": 3,
        "incorrect": 2,
        "empty_answer": 1,
        "unfinished": 1,
        "agent_error": 1,
        "missing_episode": 1,
        "missing": 0,
        "judge_failed": 1,
    }
    assert sum(counts.values()) == 10
    for outcome, row in summary["outcomes"].items():
        assert row["n"] == 10 and row["ci"] == wilson_ref(counts[outcome], 10), outcome
    assert summary["outcomes"]["missing_episode"]["rate"] == 0.1


def test_without_expected_ids_only_graded_questions_count() -> None:
    summary = summarize(run_items())
    assert summary["n"] == 9
    assert summary["accuracy"]["rate"] == round(3 / 9, 6) == 0.333333
    assert summary["outcomes"]["missing_episode"]["count"] == 0


def test_breakdowns_by_tier_and_category_with_unknowns() -> None:
    summary = summarize(run_items(), expected_ids=EXPECTED)
    tiers = summary["breakdowns"]["tier"]
    assert list(tiers) == ["(unknown)", "challenge", "frontier"]
    assert tiers["frontier"] == {"n": 5, "correct": 2, "accuracy": 0.4, "ci": wilson_ref(2, 5)}
    assert tiers["challenge"] == {"n": 4, "correct": 1, "accuracy": 0.25, "ci": wilson_ref(1, 4)}
    assert tiers["(unknown)"] == {"n": 1, "correct": 0, "accuracy": 0.0, "ci": wilson_ref(0, 1)}
    categories = summary["breakdowns"]["category"]
    assert {key: (row["n"], row["correct"]) for key, row in categories.items()} == {
        "(unknown)": (7, 1),
        "science": (1, 1),
        "sports": (2, 1),
    }
    assert summary["breakdowns"]["answer_type"] == {} and summary["breakdowns"]["difficulty"] == {}
    assert sum(row["n"] for row in tiers.values()) == summary["n"]


def test_tied_groups_keep_sorted_key_order() -> None:
    items = [
        gq("a", "correct", difficulty="medium"),
        gq("b", "incorrect", difficulty="medium"),
        gq("c", "correct", difficulty="easy"),
        gq("d", "empty_answer", difficulty="easy"),
        gq("e", "correct", difficulty="hard"),
        gq("f", "unfinished", difficulty="hard"),
    ]
    groups = summarize(items)["breakdowns"]["difficulty"]
    assert list(groups) == ["easy", "hard", "medium"]
    assert {row["accuracy"] for row in groups.values()} == {0.5}


def test_per_question_means_cover_graded_records() -> None:
    means = summarize(run_items(), expected_ids=EXPECTED)["per_question"]
    # tool calls 0..8 over 9 graded questions
    assert means == {
        "n": 9,
        "tool_calls": 4.0,
        "prompt_tokens": 400.0,
        "completion_tokens": 40.0,
        "total_tokens": 440.0,
        "n_timed": 9,
        "wall_s": 1.5,
    }


def test_checklist_scores_threshold_is_inclusive_and_unscored_count_zero() -> None:
    items = [
        gq("t0", "correct", score=0.5),
        gq("t1", "incorrect", score=0.4999),
        gq("t2", "correct", score=1.0),
        gq("t3", "judge_failed"),
    ]
    expected = ["t0", "t1", "t2", "t3", "t4"]
    checklist = summarize(items, expected_ids=expected)["checklist"]
    assert checklist["n_scored"] == 3
    assert checklist["mean_score"] == pytest.approx(1.9999 / 5)
    assert checklist["mean_score_scored_only"] == round(1.9999 / 3, 6)
    assert checklist["solved"] == {"count": 2, "n": 5, "rate": 0.4, "ci": wilson_ref(2, 5)}
    lower = summarize(items, expected_ids=expected, solved_threshold=0.4)["checklist"]
    assert lower["solved"]["count"] == 3 and lower["threshold"] == 0.4
    assert summarize(run_items())["checklist"] is None


def test_pass_and_mean_at_k_over_repeated_attempts() -> None:
    pattern = {
        "qa": [True, False, True],
        "qb": [False, False, False],
        "qc": [True, True],
    }  # qc attempt 2 missing
    items = [
        gq(qid, "correct" if hit else "incorrect", attempt=attempt)
        for qid, hits in pattern.items()
        for attempt, hit in enumerate(hits)
    ]
    summary = summarize(items)
    assert summary["accuracy"]["rate"] == round(2 / 3, 6)  # headline = attempt 0
    attempts = summary["attempts"]
    assert attempts["n_attempts"] == 3 and attempts["missing_attempts"] == 1
    # pass@1 = mean(c/n) = (2/3 + 0 + 2/3)/3; pass@2: qa 1 - C(1,2)/C(3,2) = 1, qb 0, qc 1 (n-c < k)
    assert attempts["pass_at_k"] == {"1": round(4 / 9, 6), "2": round(2 / 3, 6), "3": round(2 / 3, 6)}
    # mean@k = fraction correct among the first k attempts, averaged over questions
    assert attempts["mean_at_k"] == {"1": round(2 / 3, 6), "2": 0.5, "3": round(4 / 9, 6)}
    # every pass@k / mean@k carries a Wilson interval over the 3 questions (fractional counts)
    for name in ("pass_at_k", "mean_at_k"):
        for k, value in attempts[name].items():
            assert attempts[f"{name}_ci"][k] == pytest.approx(wilson_ref(value * 3, 3), abs=2e-6), (name, k)
    by_attempt = attempts["accuracy_by_attempt"]
    assert {a: row["count"] for a, row in by_attempt.items()} == {"0": 2, "1": 1, "2": 1}  # qc's 2 is missing
    assert by_attempt["1"] == {"count": 1, "n": 3, "rate": round(1 / 3, 6), "ci": wilson_ref(1, 3)}
    assert summarize(run_items())["attempts"] is None


def test_output_is_deterministic_sorted_and_rounded() -> None:
    items = run_items()
    first = json.dumps(summarize(items, expected_ids=EXPECTED))
    shuffled = items[:]
    random.Random(7).shuffle(shuffled)
    assert json.dumps(summarize(shuffled, expected_ids=EXPECTED)) == first
    assert json.dumps(json.loads(first), sort_keys=True) == first

    def floats(value: Any) -> list[float]:
        if isinstance(value, dict):
            return [f for v in value.values() for f in floats(v)]
        if isinstance(value, list):
            return [f for v in value for f in floats(v)]
        return [value] if isinstance(value, float) else []

    assert all(f == round(f, 6) for f in floats(json.loads(first)))


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([gq("q1", "correct"), gq("q1", "incorrect")], None),  # graded twice
        ([gq("q1", "correct")], ["q2"]),  # graded question not expected
        ([gq("q1", "correct")], ["q1", "q1"]),  # duplicate expected id
        ([], None),  # nothing to score
    ],
)
def test_summarize_rejects_inconsistent_input(
    items: list[GradedQuestion], expected: list[str] | None
) -> None:
    with pytest.raises(ValueError):
        summarize(items, expected_ids=expected)


def test_all_missing_run_scores_zero_not_undefined() -> None:
    summary = summarize([], expected_ids=["a", "b", "c"])
    assert summary["accuracy"]["rate"] == 0.0 and summary["outcomes"]["missing_episode"]["count"] == 3
    assert summary["per_question"]["n"] == 0 and summary["per_question"]["tool_calls"] is None


# ---- compare_runs -----------------------------------------------------------------------------------------


def test_compare_runs_pairs_flips_and_mcnemar() -> None:
    a_correct = {
        "q0": True,
        "q1": True,
        "q2": True,
        "q3": True,
        "q4": False,
        "q5": False,
        "q6": False,
        "q7": False,
    }
    b_correct = {
        "q1": True,
        "q2": False,
        "q3": False,
        "q4": True,
        "q5": True,
        "q6": True,
        "q7": False,
        "q8": True,
    }
    run_a = [gq(q, "correct" if c else "incorrect") for q, c in reversed(a_correct.items())]
    run_b = [gq(q, "correct" if c else "empty_answer") for q, c in b_correct.items()]
    run_b.append(gq("q1", "incorrect", attempt=1))  # later attempts are ignored
    result = compare_runs(run_a, run_b)
    assert result["n_paired"] == 7
    assert result["unpaired"] == {"only_a": ["q0"], "only_b": ["q8"], "n_only_a": 1, "n_only_b": 1}
    assert result["table"] == {"both_correct": 1, "a_only": 2, "b_only": 3, "both_incorrect": 1}
    assert result["flips"] == {
        "correct_to_incorrect": ["q2", "q3"],
        "incorrect_to_correct": ["q4", "q5", "q6"],
    }
    assert result["accuracy_a"]["count"] == 3 and result["accuracy_b"]["count"] == 4
    assert result["difference"] == round(1 / 7, 6)
    ref = sm_mcnemar([[1, 2], [3, 1]], exact=True).pvalue
    assert result["mcnemar_p"] == round(float(ref), 6) == 1.0


def test_compare_runs_significant_difference() -> None:
    ids = [f"x{i:02d}" for i in range(20)]
    run_a = [gq(q, "correct" if i < 3 else "incorrect") for i, q in enumerate(ids)]
    # b fixes x03..x14 (12) and breaks x00 (1): p = 2 * (1 + 13) / 2**13
    run_b = [gq(q, "correct" if 1 <= i <= 14 else "incorrect") for i, q in enumerate(ids)]
    result = compare_runs(run_a, run_b)
    assert result["table"]["a_only"] == 1 and result["table"]["b_only"] == 12
    assert result["mcnemar_p"] == round(28 / 8192, 6)
    assert result["flips"]["correct_to_incorrect"] == ["x00"]
    assert result["unpaired"]["n_only_a"] == 0


# ---- judge_agreement --------------------------------------------------------------------------------------


def test_judge_agreement_kappa_and_spearman() -> None:
    judge_a = [True, True, False, False, True, False, True, False, False, False]
    judge_b = [True, False, False, False, True, False, True, True, False, False]
    scores_a = [0.9, 0.6, 0.2, 0.1, 0.8, 0.3, 0.7, 0.4, None, None]
    scores_b = [1.0, 0.4, 0.2, 0.0, 0.9, 0.3, 0.6, 0.5, 0.2, None]
    a = [
        gq(f"q{i}", "correct" if c else "incorrect", score=s)
        for i, (c, s) in enumerate(zip(judge_a, scores_a, strict=True))
    ]
    b = [
        gq(f"q{i}", "correct" if c else "incorrect", score=s)
        for i, (c, s) in enumerate(zip(judge_b, scores_b, strict=True))
    ]
    a.append(gq("q10", "correct"))
    result = judge_agreement(a, b)
    assert result["n"] == result["n_records"] == 10 and result["unpaired"] == {"only_a": 1, "only_b": 0}
    assert result["not_judged"] == 0 and result["judge_failed"] == {"a": 0, "b": 0}
    assert result["agreement"] == {"count": 8, "n": 10, "rate": 0.8, "ci": wilson_ref(8, 10)}
    # p_o = 0.8, p_e = 0.4*0.4 + 0.6*0.6 = 0.52 -> kappa = 0.28 / 0.48
    assert result["kappa"] == round(0.28 / 0.48, 6)
    assert result["disagreements"] == [["q1", 0], ["q7", 0]]
    assert result["n_scored"] == 8
    # a ranks: 8 5 2 1 7 3 6 4 ; b ranks: 8 4 2 1 7 3 6 5 ; sum d^2 = 2 ; rho = 1 - 6*2 / (8*(64-1))
    assert result["spearman"] == round(1 - 6 * 2 / (8 * 63), 6) == 0.97619


def test_judge_agreement_compares_only_what_both_judges_decided() -> None:
    """Missing, unfinished, empty answers are incorrect whatever the judge: they must not inflate kappa."""
    fixed = [gq("m1", "missing_episode"), gq("m2", "empty_answer", final_answer=""),
             gq("m3", "unfinished"), gq("m4", "agent_error")]
    a = [*fixed, gq("j1", "correct", final_answer="x"), gq("j2", "incorrect", final_answer="y"),
         gq("j3", "correct", final_answer="z"), gq("j4", "judge_failed", final_answer="w")]
    b = [*fixed, gq("j1", "correct", final_answer="x"), gq("j2", "correct", final_answer="y"),
         gq("j3", "incorrect", final_answer="z"), gq("j4", "incorrect", final_answer="w")]
    result = judge_agreement(a, b)
    assert result["n_records"] == 8 and result["not_judged"] == 4 and result["judge_failed"] == {"a": 1, "b": 0}
    assert result["n"] == 3 and result["agreement"]["count"] == 1
    assert result["disagreements"] == [["j2", 0], ["j3", 0]]
    # p_o = 1/3; marginals a: 2 correct / 1 not, b: 2 / 1 -> p_e = 5/9; kappa = (1/3 - 5/9) / (4/9) = -0.5
    assert result["kappa"] == -0.5


@pytest.mark.parametrize("b_record", [gq("j1", "correct", final_answer="another answer"),
                                      gq("j1", "empty_answer", final_answer="x")])
def test_judge_agreement_refuses_two_different_runs(b_record: GradedQuestion) -> None:
    with pytest.raises(ValueError, match="different runs"):
        judge_agreement([gq("j1", "correct", final_answer="x")], [b_record])


def test_per_question_means_leave_missing_episodes_out() -> None:
    items = [gq("q0", "correct", tool_calls=4, wall_s=2.0), gq("q1", "incorrect", tool_calls=2, wall_s=1.0),
             gq("q2", "missing_episode"), gq("q3", "incorrect", tool_calls=6)]  # q3: no timing recorded
    summary = summarize(items)
    means = summary["per_question"]
    assert means["n"] == 3 and means["tool_calls"] == 4.0
    assert means["n_timed"] == 2 and means["wall_s"] == 1.5  # an unknown wall time is not 0 s
    assert "wall time (s)      1.50 (over 2 timed)" in render_table(summary)
    untimed = summarize([gq("q3", "incorrect")])
    assert untimed["per_question"]["wall_s"] is None and "n/a (no timings.jsonl)" in render_table(untimed)


def test_judge_agreement_without_scores() -> None:
    a = [gq("q1", "correct"), gq("q2", "incorrect")]
    result = judge_agreement(a, a)
    assert result["kappa"] == 1.0 and result["spearman"] is None and result["n_scored"] == 0
    empty = judge_agreement(a, [])
    assert empty["n"] == 0 and empty["kappa"] is None and empty["agreement"]["rate"] is None


# ---- render_table -----------------------------------------------------------------------------------------


def test_render_table_shows_accuracy_every_outcome_and_breakdowns() -> None:
    text = render_table(summarize(run_items(), expected_ids=EXPECTED))
    assert "accuracy   0.3000  [0.1078, 0.6032]  (3/10, Wilson 95% CI)" in text
    expected_counts = {"correct": 3, "incorrect": 2, "empty_answer": 1, "unfinished": 1}
    expected_counts |= {"agent_error": 1, "missing_episode": 1, "missing": 0, "judge_failed": 1}
    for outcome, count in expected_counts.items():
        assert re.search(rf"^{outcome}\s+{count}\s+\d\.\d{{4}}\s+\[", text, re.MULTILINE), outcome
    assert re.search(r"^frontier\s+5\s+2\s+0\.4000\s+\[", text, re.MULTILINE)
    assert re.search(r"^\(unknown\)\s+1\s+0\s+0\.0000", text, re.MULTILINE)
    assert "tool calls         4.00" in text
    assert "checklist" not in text and "pass@k" not in text


def test_render_table_checklist_and_attempts_sections() -> None:
    items = [
        gq("a", "correct", score=0.75),
        gq("a", "incorrect", attempt=1, score=0.25),
        gq("b", "incorrect", score=0.0),
    ]
    text = render_table(summarize(items))
    assert "solved (score >= 0.5)  0.5000" in text
    # k=2: pass@2 = 1/2, mean@2 = 1/4, each with its interval
    assert re.search(r"^\s+2\s+0\.5000\s+\[0\.0945, 0\.9055\]\s+0\.2500\s+\[0\.0267, 0\.8021\]$", text, re.MULTILINE)
