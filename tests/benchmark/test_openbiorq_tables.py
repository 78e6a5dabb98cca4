"""OpenBioRQ's tables (per domain and track, by identifier type, by criterion type, wrong paper
vs must_ground, the leaderboard's micro/macro averages) on a fixture checked by hand, and the
2×2 statistics against statsmodels."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import Table2x2
from statsmodels.stats.proportion import proportion_confint

from drsearch.benchmark.openbiorq_tables import (
    UNLABELLED,
    item_facts,
    leaderboard,
    render_leaderboard,
    render_run_tables,
    run_tables,
    two_by_two,
)
from drsearch.benchmark.records import GradedQuestion
from drsearch.benchmark.stats import wilson_interval


def row(task_id: str, domain: str | None, track: str, bucket: str | None, frozen: bool | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"difficulty": {"bucket": bucket, "frozen_core": frozen}}
    if domain is not None:
        meta["taxonomy"] = domain
    return {"metadata": {"openbiorq": meta}, "task_id": task_id, "track": track}


ITEMS = [item_facts(r) for r in (
    row("PMID:1#0", "clinical_medicine", "retrieval_verified", "core", True),
    row("PMID:2#0", "clinical_medicine", "retrieval_verified", "core", False),
    row("NCT00000003#0", "oncology", "expert_consensus", "discriminating", None),
    row("NCT00000004#0", "oncology", "retrieval_verified", "easy", None),
    row("DOC:a#0", "oncology", "expand", "core", True),
    row("DOC:b#0", None, "expand", None, None),
)]


def crit(kind: str, weight: int, verdict: str) -> dict[str, Any]:
    value = {"met": 1.0, "partial": 0.5, "not_met": 0.0}[verdict]
    return {"type": kind, "value": 1.0 - value if kind == "must_avoid" else value, "verdict": verdict,
            "weight": weight}


def cite(kind: str, support: str | None, existence: str = "found") -> dict[str, Any]:
    return {"existence": existence, "kind": kind, "support": support, "value": "x",
            "support_judge": {"model": "j"}}


def graded(qid: str, index: int, solved: bool, criteria: list[dict[str, Any]] | None,
           citations: list[dict[str, Any]] | None, outcome: str | None = None) -> GradedQuestion:
    total = sum(c["weight"] for c in criteria or [])
    score = sum(c["weight"] * c["value"] for c in criteria or []) / total if total else None
    judge = None if criteria is None else {"citations": citations or [], "verdict": {"criteria": criteria}}
    out = outcome or ("correct" if solved else "incorrect")
    return GradedQuestion(question_id=qid, index=index, episode_status="answered" if judge else "missing",
                          outcome=out, correct=out == "correct", score=score, judge=judge)  # type: ignore[arg-type]


def ep(answer: str | None, tools: int) -> dict[str, Any]:
    return {"accounting": {"tool_calls": {"search": tools}}, "final_answer": answer, "status": "answered",
            "tool_calls": [{"name": "search"}] * tools}


# run A (weights 3/2/1/2 = 8 in every checklist):
#  PMID:1  solved, scores .9375, must_ground met, cites pmid yes + pmid no (wrong)      → 2×2 cell a
#  PMID:2  zero tools, .375, must_ground not met, cites pmid yes                         → d
#  NCT3    solved .625, must_ground met, cites nct no (wrong)                            → a
#  NCT4    solved .6875, must_ground partial (not every one met), nct no + pmid notfound → c
#  DOC:a   a written refusal, zero tools, .375, no citation                              → not in the 2×2
#  DOC:b   no episode
GRADED_A = [
    graded("PMID:1#0", 0, True, [crit("must_mention", 3, "met"), crit("must_ground", 2, "met"),
                                 crit("must_acknowledge", 1, "partial"), crit("must_avoid", 2, "not_met")],
           [cite("pmid", "yes"), cite("pmid", "no")]),
    graded("PMID:2#0", 1, False, [crit("must_ground", 2, "not_met"), crit("must_mention", 3, "not_met"),
                                  crit("must_acknowledge", 1, "met"), crit("must_avoid", 2, "not_met")],
           [cite("pmid", "yes")]),
    graded("NCT00000003#0", 2, True, [crit("must_mention", 3, "met"), crit("must_ground", 2, "met"),
                                      crit("must_acknowledge", 1, "not_met"), crit("must_avoid", 2, "met")],
           [cite("nct", "no")]),
    graded("NCT00000004#0", 3, True, [crit("must_mention", 3, "partial"), crit("must_ground", 2, "partial"),
                                      crit("must_acknowledge", 1, "met"), crit("must_avoid", 2, "not_met")],
           [cite("nct", "no"), cite("pmid", None, "notfound")]),
    graded("DOC:a#0", 4, False, [crit("must_mention", 3, "not_met"), crit("must_ground", 2, "not_met"),
                                 crit("must_acknowledge", 1, "met"), crit("must_avoid", 2, "not_met")], []),
    graded("DOC:b#0", 5, False, None, None, outcome="missing_episode"),
]
EPISODES_A = {"PMID:1#0": ep("See PMID: 1 and PMID: 7.", 2), "PMID:2#0": ep("PMID: 2 says so.", 0),
              "NCT00000003#0": ep("NCT00000009 is the trial.", 1),
              "NCT00000004#0": ep("NCT00000008; PMID: 5.", 1),
              "DOC:a#0": ep("I cannot answer this question.", 0)}


def cell(tables: dict[str, Any], key: str, group: str, metric: str) -> tuple[float, int]:
    c = tables[key][group][metric]
    assert c["ci95"] == [round(x, 6) for x in wilson_interval(c["count"], c["n"])]
    return c["count"], c["n"]


def test_per_domain_and_per_track_tables_by_hand() -> None:
    t = run_tables(ITEMS, GRADED_A, EPISODES_A)
    assert list(t["domains"]) == ["clinical_medicine", "oncology", UNLABELLED]  # the paper's order
    expect = {  # coverage, solved, zero-tool, wrong-paper (judged citations), frozen-core share
        ("domains", "clinical_medicine"): [(2, 2), (1, 2), (1, 2), (1, 3), (1, 2)],
        ("domains", "oncology"): [(2, 3), (2, 3), (1, 3), (2, 2), (1, 2)],  # DOC:a's refusal: no coverage
        ("domains", UNLABELLED): [(0, 1), (0, 1), (0, 0), (0, 0), (0, 2)],
        ("tracks", "retrieval_verified"): [(3, 3), (2, 3), (1, 3), (2, 4), (1, 2)],
        ("tracks", "expert_consensus"): [(1, 1), (1, 1), (0, 1), (1, 1), (0, 2)],
        ("tracks", "expand"): [(0, 2), (0, 2), (1, 1), (0, 0), (1, 2)],
    }
    for (key, group), cells in expect.items():
        got = [cell(t, key, group, m) for m in ("response_coverage", "solve_rate", "zero_tool", "wrong_paper",
                                                "frozen_core_share")]
        assert got == cells, (key, group)
    assert t["domains"]["oncology"]["items"] == 3 and t["domains"][UNLABELLED]["wrong_paper"]["rate"] is None


def test_wrong_paper_by_identifier_type_and_criterion_decomposition_by_hand() -> None:
    t = run_tables(ITEMS, GRADED_A, EPISODES_A)
    assert {k: (v["count"], v["n"]) for k, v in t["wrong_paper_by_kind"].items()} == {"nct": (2, 2), "pmid": (1, 3)}
    # Σw·v / Σw per type over the five scored answers: must_mention (3+0+3+1.5+0)/15, must_ground (2+0+2+1+0)/10,
    # must_acknowledge (.5+1+0+1+1)/5, must_avoid (2+2+0+2+2)/10; contributions Σ w·v / 8 / 5
    c = t["criteria"]
    assert [c[k]["mean_value"] for k in ("must_mention", "must_ground", "must_acknowledge", "must_avoid")] == [
        0.5, 0.5, 0.7, 0.8]
    contributions = [c[k]["contribution"] for k in ("must_mention", "must_ground", "must_acknowledge", "must_avoid")]
    assert contributions == [0.1875, 0.125, 0.0875, 0.2]
    scores = [g.score for g in GRADED_A if g.score is not None]
    assert sum(contributions) == pytest.approx(sum(scores) / len(scores))  # they add up to the mean score
    assert c["answers_scored"] == {"n": 5} and c["must_ground"]["criteria"] == 5


def test_wrong_paper_vs_must_ground_matches_statsmodels() -> None:
    t = run_tables(ITEMS, GRADED_A, EPISODES_A)["wrong_paper_vs_must_ground"]
    assert t["table"] == {"a": 2, "b": 0, "c": 1, "d": 1}  # by hand: see the run's comment
    assert t["corrected"] is True  # b is 0: 0.5 added to every cell
    # by hand: (2.5/3) / (1.5/3) = 5/3; (2.5·1.5) / (0.5·1.5) = 5
    assert t["risk_ratio"] == round(5 / 3, 6) and t["odds_ratio"] == 5.0
    # statsmodels' shift_zeros shifts only the zero cells; Haldane–Anscombe (ours) shifts all four
    ref = Table2x2(np.array([[2.5, 0.5], [1.5, 1.5]]))
    assert t["risk_ratio"] == pytest.approx(ref.riskratio, abs=1e-6)
    assert t["odds_ratio"] == pytest.approx(ref.oddsratio, abs=1e-6)
    assert t["risk_ratio_ci95"] == pytest.approx(list(ref.riskratio_confint()), abs=1e-6)
    assert t["odds_ratio_ci95"] == pytest.approx(list(ref.oddsratio_confint()), abs=1e-6)


@pytest.mark.parametrize("cells", [(12, 5, 7, 9), (47, 184, 593, 3952), (1, 9, 3, 2)])
def test_two_by_two_matches_statsmodels_without_correction(cells: tuple[int, int, int, int]) -> None:
    a, b, c, d = cells
    t = two_by_two(a, b, c, d)
    ref = Table2x2(np.array([[a, b], [c, d]]))
    assert not t["corrected"]
    assert t["risk_ratio"] == pytest.approx((a / (a + b)) / (c / (c + d)), abs=1e-6)
    assert t["risk_ratio"] == pytest.approx(ref.riskratio, abs=1e-6)
    assert t["odds_ratio"] == pytest.approx(a * d / (b * c), abs=1e-6)
    assert t["risk_ratio_ci95"] == pytest.approx(list(ref.riskratio_confint()), abs=1e-6)
    assert t["odds_ratio_ci95"] == pytest.approx(list(ref.oddsratio_confint()), abs=1e-6)


def test_an_empty_row_gives_no_ratio() -> None:
    assert two_by_two(0, 0, 3, 4)["risk_ratio"] is None and two_by_two(3, 0, 4, 0)["odds_ratio"] is None


# run B: the same answers, every answered item solved; it also answers DOC:b (one tool, a wrong PMID)
GRADED_B = [g.model_copy(update={"correct": True, "outcome": "correct"}) for g in GRADED_A[:5]] + [
    graded("DOC:b#0", 5, True, [crit("must_mention", 3, "met"), crit("must_ground", 2, "met"),
                                crit("must_acknowledge", 1, "met"), crit("must_avoid", 2, "not_met")],
           [cite("pmid", "no")])]
EPISODES_B = {**EPISODES_A, "DOC:b#0": ep("PMID: 9 settles it.", 1)}


def test_leaderboard_solve_rates_with_wilson_and_micro_macro_averages() -> None:
    body = leaderboard(ITEMS, [{"episodes": EPISODES_A, "graded": GRADED_A, "model": "m-a", "name": "runs/a"},
                               {"episodes": EPISODES_B, "graded": GRADED_B, "model": "m-b", "name": "runs/b"}])
    assert body["items"] == {"core": 3, "frozen_core": 2, "whole": 6}
    assert [r["run"] for r in body["rows"]] == ["runs/b", "runs/a"]  # best whole-set solve rate first
    b, a = body["rows"]
    assert [(r["whole"]["count"], r["core"]["count"], r["frozen_core"]["count"]) for r in (a, b)] == [
        (3, 1, 1), (6, 3, 2)]
    low, high = proportion_confint(3, 6, method="wilson")
    assert a["whole"]["ci95"] == [pytest.approx(low, abs=1e-6), pytest.approx(high, abs=1e-6)]
    expand = body["tracks"]["expand"]
    # zero-tool on expand: A 1 of 1 answers, B 1 of 2 → micro 2/3, macro (1 + 0.5)/2
    assert (expand["zero_tool"]["micro"]["count"], expand["zero_tool"]["micro"]["n"]) == (2, 3)
    assert expand["zero_tool"]["micro"]["rate"] == round(2 / 3, 6) and expand["zero_tool"]["macro"] == 0.75
    # wrong paper on the unlabelled domain: A has no judged citation (left out of the macro), B 1 of 1
    unlabelled = body["domains"][UNLABELLED]["wrong_paper"]
    assert unlabelled["macro"] == 1.0 and unlabelled["models"] == 1 and unlabelled["micro"]["n"] == 1
    solve = body["domains"]["oncology"]["solve_rate"]  # A 2/3, B 3/3
    assert solve["micro"]["count"] == 5 and solve["macro"] == pytest.approx((2 / 3 + 1) / 2, abs=1e-6)
    text = render_leaderboard(body)
    assert "runs/b" in text.splitlines()[1] and "Clinical Medicine" in text and "expand" in text
    assert "Oncology" in render_run_tables(body["per_run"]["runs/a"])
