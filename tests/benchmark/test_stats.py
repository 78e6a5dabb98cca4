"""drsearch.benchmark.stats against statsmodels, brute force and hand-computed values."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.proportion import proportion_confint

from drsearch.benchmark.stats import (
    cohen_kappa,
    mcnemar_exact,
    mean_at_k,
    pass_at_k,
    spearman,
    wilson_interval,
)

# ---- Wilson -----------------------------------------------------------------------------------------------

WILSON_GRID = [
    (s, n) for n in (*range(1, 21), 37, 100, 256, 900) for s in sorted({0, 1, n // 3, n // 2, n - 1, n})
]


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels_over_grid(confidence: float) -> None:
    for successes, n in WILSON_GRID:
        low, high = wilson_interval(successes, n, confidence)
        ref_low, ref_high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
        assert round(low, 4) == round(float(ref_low), 4), (successes, n, confidence)
        assert round(high, 4) == round(float(ref_high), 4), (successes, n, confidence)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy_to_4_decimals(confidence: float) -> None:
    from scipy.stats import binomtest  # type: ignore[import-untyped]

    for successes, n in WILSON_GRID:
        ref = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
        low, high = wilson_interval(successes, n, confidence)
        assert (round(low, 4), round(high, 4)) == (round(ref.low, 4), round(ref.high, 4)), (successes, n)


def test_wilson_fractional_counts_match_statsmodels() -> None:
    """pass@k and mean@k are means over questions: n·mean successes need not be whole."""
    for count, n in ((4 / 3, 3), (2.5, 7), (0.25, 1), (99.9, 100)):
        ref_low, ref_high = proportion_confint(count, n, alpha=0.05, method="wilson")
        assert wilson_interval(count, n) == pytest.approx((float(ref_low), float(ref_high)), abs=1e-12)


def test_wilson_hand_computed_values() -> None:
    # 3/10 at 95%: centre = (0.3 + 1.92073/10) / 1.384146 = 0.355452, half = 0.247765.
    assert wilson_interval(3, 10) == pytest.approx((0.1078, 0.6032), abs=5e-5)
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert wilson_interval(10, 10) == pytest.approx((0.7225, 1.0), abs=5e-5)


def test_wilson_edges_are_exact() -> None:
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("successes", "n", "confidence"), [(-1, 5, 0.95), (6, 5, 0.95), (1, 5, 1.0), (1, 5, 0.0)]
)
def test_wilson_rejects_bad_input(successes: int, n: int, confidence: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(successes, n, confidence)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_contains_estimate_and_stays_in_unit_interval(case: tuple[int, int]) -> None:
    successes, n = case
    low, high = wilson_interval(successes, n)
    assert 0.0 <= low <= successes / n <= high <= 1.0
    wider = wilson_interval(successes, n, 0.99)
    assert wider[0] <= low + 1e-12 and high <= wider[1] + 1e-12


# ---- McNemar ----------------------------------------------------------------------------------------------


def test_mcnemar_matches_statsmodels_exact() -> None:
    for b, c in itertools.product(range(0, 16), repeat=2):
        ref = sm_mcnemar([[7, b], [c, 3]], exact=True).pvalue
        assert mcnemar_exact(b, c) == pytest.approx(float(ref), abs=1e-12), (b, c)


def test_mcnemar_hand_computed() -> None:
    # b=0, c=5: 2 * 0.5**5 = 0.0625; b=1, c=9: 2 * (1 + 10) / 1024.
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(4, 4) == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


# ---- pass@k / mean@k --------------------------------------------------------------------------------------


def brute_pass_at_k(n: int, c: int, k: int) -> float:
    subsets = list(itertools.combinations(range(n), k))
    return sum(1 for subset in subsets if any(i < c for i in subset)) / len(subsets)


def test_pass_at_k_matches_subset_enumeration() -> None:
    for n in range(1, 11):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k), abs=1e-12), (n, c, k)


def test_pass_at_k_hand_values_and_large_n() -> None:
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(5, 0, 5) == 0.0
    expected = 1 - math.comb(1990, 100) / math.comb(2000, 100)
    assert pass_at_k(2000, 10, 100) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_pass_at_k_rejects_bad_input(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_monotone_in_k_and_pass1_is_rate(case: tuple[int, int]) -> None:
    n, c = case
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert values[0] == pytest.approx(c / n)
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(values))


def test_mean_at_k_uses_first_k_attempts() -> None:
    hits = [False, True, True, False]
    assert [mean_at_k(hits, k) for k in (1, 2, 3, 4)] == [0.0, 0.5, pytest.approx(2 / 3), 0.5]
    with pytest.raises(ValueError):
        mean_at_k(hits, 5)
    with pytest.raises(ValueError):
        mean_at_k(hits, 0)


# ---- Cohen's kappa ----------------------------------------------------------------------------------------


def kappa_oracle(a: list[object], b: list[object]) -> float:
    labels = sorted({*a, *b}, key=repr)
    table = [[sum(1 for x, y in zip(a, b, strict=True) if x == r and y == s) for s in labels] for r in labels]
    return float(sm_cohens_kappa(table).kappa)


def test_kappa_hand_computed() -> None:
    # 10 items: both yes 4, both no 3, a-yes/b-no 2, a-no/b-yes 1.
    a = [True] * 4 + [False] * 3 + [True] * 2 + [False]
    b = [True] * 4 + [False] * 3 + [False] * 2 + [True]
    # p_o = 0.7; p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = 0.2 / 0.5 = 0.4
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, b) == pytest.approx(kappa_oracle(list(a), list(b)))


def test_kappa_string_labels_against_statsmodels() -> None:
    a = ["met", "met", "partial", "not_met", "met", "partial", "not_met", "not_met", "met"]
    b = ["met", "partial", "partial", "not_met", "met", "met", "not_met", "partial", "met"]
    assert cohen_kappa(a, b) == pytest.approx(kappa_oracle(list(a), list(b)))


def test_kappa_degenerate_cases() -> None:
    assert cohen_kappa([True] * 5, [True] * 5) == 1.0  # single shared category: documented 1.0
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    assert cohen_kappa([True] * 4, [False] * 4) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        cohen_kappa([], [])
    with pytest.raises(ValueError):
        cohen_kappa([True], [True, False])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # statsmodels' kappa standard error on tiny tables
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), min_size=1, max_size=40))
def test_kappa_agrees_with_statsmodels_and_is_symmetric(pairs: list[tuple[str, str]]) -> None:
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    kappa = cohen_kappa(a, b)
    assert kappa == pytest.approx(cohen_kappa(b, a))
    assert -1.0 - 1e-12 <= kappa <= 1.0 + 1e-12
    if len({*a, *b}) > 1:
        assert kappa == pytest.approx(kappa_oracle(list(a), list(b)), abs=1e-9)


# ---- Spearman ---------------------------------------------------------------------------------------------


def average_ranks(values: list[float]) -> list[float]:
    ordered = sorted(values)
    return [ordered.index(v) + (ordered.count(v) + 1) / 2 for v in values]


def pearson(x: list[float], y: list[float]) -> float:
    mx, my = sum(x) / len(x), sum(y) / len(y)
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def test_spearman_with_ties_matches_average_rank_pearson() -> None:
    x = [0.5, 0.5, 1.0, 0.0, 0.25, 1.0]
    y = [0.4, 0.6, 1.0, 0.1, 0.6, 0.9]
    rho = spearman(x, y)
    assert rho is not None
    assert rho == pytest.approx(pearson(average_ranks(x), average_ranks(y)))
    assert spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)


def test_spearman_undefined_is_none() -> None:
    assert spearman([], []) is None
    assert spearman([0.3], [0.5]) is None
    assert spearman([1.0, 1.0, 1.0], [0.1, 0.5, 0.9]) is None
    with pytest.raises(ValueError):
        spearman([1.0], [1.0, 2.0])
