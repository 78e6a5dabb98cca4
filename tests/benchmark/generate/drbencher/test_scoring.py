"""DrBencher scoring functions, cross-checked against scipy and statsmodels."""

from __future__ import annotations

import random

import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.proportion import proportion_confint

from drsearch.benchmark.generate.drbencher.scoring import (
    accuracy_by_cci,
    entity_identified,
    jonckheere_terpstra,
    majority_compare,
    majority_mcnemar,
)
from drsearch.benchmark.records import GradedQuestion

ZUG = [{"aliases": ["Zugspitz"], "label": "Zugspitze", "qid": "Q3375"}]


def test_entity_identification_is_its_own_verdict() -> None:
    assert entity_identified("40.2 s/day", ["search: highest mountain Germany", "open: Zugspitze article"], ZUG)
    assert entity_identified("The Zugspitz loses 40 s/day", [], ZUG)
    assert not entity_identified("40.17 s/day", ["search: pendulum drift"], ZUG)
    assert not entity_identified("Zugspitzbahn", [], ZUG)  # word boundaries


def test_accuracy_by_cci_has_wilson_intervals() -> None:
    rows = [(2, True), (2, True), (2, False), (3, False), (3, True), (4, False)]
    table = accuracy_by_cci(rows)
    assert list(table) == ["2", "3", "4"] and table["2"]["n"] == 3 and table["2"]["correct"] == 2
    low, high = proportion_confint(2, 3, alpha=0.05, method="wilson")
    assert table["2"]["ci"] == pytest.approx([low, high], abs=1e-12)
    assert table["4"]["accuracy"] == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_jonckheere_terpstra_equals_kendalls_tau_test(seed: int) -> None:
    rng = random.Random(seed)
    groups = [[float(rng.random() < p) for _ in range(rng.randint(5, 12))] for p in (0.8, 0.5, 0.3, 0.1)]
    result = jonckheere_terpstra(groups, exact=False)  # the normal approximation is Kendall's test
    level = [i for i, g in enumerate(groups) for _ in g]
    outcome = [v for g in groups for v in g]
    tau = sps.kendalltau(level, outcome, method="asymptotic")
    # J = Σ U_ij: scipy's Mann–Whitney U (ties ½) of each ordered pair of groups
    u = sum(sps.mannwhitneyu(groups[j], groups[i]).statistic for i in range(4) for j in range(i + 1, 4))
    assert result["J"] == pytest.approx(u)
    assert result["p"] == pytest.approx(tau.pvalue, rel=1e-9)
    assert (result["z"] < 0) == (tau.statistic < 0)


def test_jonckheere_terpstra_refuses_what_it_cannot_test() -> None:
    with pytest.raises(ValueError, match="two non-empty"):
        jonckheere_terpstra([[1.0, 0.0], []])
    with pytest.raises(ValueError, match="no variance"):
        jonckheere_terpstra([[1.0, 1.0], [1.0]])


def test_majority_vote_mcnemar_matches_statsmodels() -> None:
    rng = random.Random(3)
    a = {f"q{i}": [rng.random() < 0.6 for _ in range(3)] for i in range(40)}
    b = {f"q{i}": [rng.random() < 0.35 for _ in range(3)] for i in range(40)}
    result = majority_mcnemar(a, b)
    maj_a = {q: sum(v) >= 2 for q, v in a.items()}
    maj_b = {q: sum(v) >= 2 for q, v in b.items()}
    table = [[sum(maj_a[q] and maj_b[q] for q in a), sum(maj_a[q] and not maj_b[q] for q in a)],
             [sum(maj_b[q] and not maj_a[q] for q in a), sum(not maj_a[q] and not maj_b[q] for q in a)]]
    assert (result["a_only"], result["b_only"]) == (table[0][1], table[1][0])
    assert result["p"] == pytest.approx(sm_mcnemar(table, exact=True).pvalue, rel=1e-12)
    with pytest.raises(ValueError, match="3 attempts"):
        majority_mcnemar({"q": [True]}, {"q": [True]})


def _graded(qid: str, attempt: int, correct: bool) -> GradedQuestion:
    return GradedQuestion(question_id=qid, index=0, attempt=attempt, episode_status="answered",
                          outcome="correct" if correct else "incorrect", correct=correct)


def test_majority_compare_of_graded_records_checks_its_attempts() -> None:
    rng = random.Random(5)
    a = {f"q{i}": [rng.random() < 0.6 for _ in range(3)] for i in range(30)}
    b = {f"q{i}": [rng.random() < 0.4 for _ in range(3)] for i in range(30)}
    # records in any order: the vote groups them by question and attempt
    records_a = [_graded(q, n, v[n]) for n in (2, 0, 1) for q, v in a.items()]
    records_b = [_graded(q, n, v[n]) for q, v in reversed(b.items()) for n in range(3)]
    result = majority_compare(records_a, records_b)
    assert {k: result[k] for k in ("a_only", "b_only", "n", "p")} == majority_mcnemar(a, b)
    assert result["both_correct"] + result["a_only"] + result["b_only"] + result["both_incorrect"] == 30
    assert len(result["flips"]["correct_to_incorrect"]) == result["a_only"]
    with pytest.raises(ValueError, match="attempt 1 graded twice in run A"):
        majority_compare([*records_a, _graded("q0", 1, True)], records_b)
    with pytest.raises(ValueError, match="run B has attempt\\(s\\) 0, 1, 3"):
        majority_compare(records_a, [_graded("q", n, True) for n in (0, 1, 3)])
    with pytest.raises(ValueError, match="run A has no graded questions"):
        majority_compare([], records_b)
