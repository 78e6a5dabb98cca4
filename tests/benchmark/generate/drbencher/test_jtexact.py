"""The exact Jonckheere–Terpstra p: by hand, on textbook examples, against brute-force
enumeration of every assignment, and the switch to the normal approximation past the budget."""

from __future__ import annotations

import random
from itertools import combinations
from math import factorial, prod

import pytest

from drsearch.benchmark.generate.drbencher.jtexact import EXACT_MAX_STEPS, exact_tails, jt_null_counts
from drsearch.benchmark.generate.drbencher.scoring import EXACT_METHOD, NORMAL_METHOD, jonckheere_terpstra


def twice_j(groups: list[list[float]]) -> int:
    return sum(2 if x < y else 1 if x == y else 0 for a in range(len(groups)) for b in range(a + 1, len(groups))
               for x in groups[a] for y in groups[b])


def brute_counts(values: list[float], sizes: list[int]) -> dict[int, int]:
    """Every assignment of the (individually labelled) values to groups of ``sizes``."""
    out: dict[int, int] = {}

    def rec(rest: list[int], sizes: list[int], acc: list[list[float]]) -> None:
        if len(sizes) == 1:
            j2 = twice_j([*acc, [values[i] for i in rest]])
            out[j2] = out.get(j2, 0) + 1
            return
        for chosen in combinations(rest, sizes[0]):
            rec([i for i in rest if i not in chosen], sizes[1:], [*acc, [values[i] for i in chosen]])

    rec(list(range(len(values))), sizes, [])
    return out


def test_by_hand_three_singletons_with_a_tie() -> None:
    """[0.5], [0.5], [0]: of the 3! assignments, two put the 0 first (J = 1 + 1 + ½ = 2.5), two
    second (0 + ½ + 1 = 1.5), two last (½ + 0 + 0 = 0.5, the observed J): P(J ≤ 0.5) = 1/3,
    P(J ≥ 0.5) = 1."""
    assert jt_null_counts([[0.5], [0.5], [0.0]]) == {5: 2, 3: 2, 1: 2}
    r = jonckheere_terpstra([[0.5], [0.5], [0.0]])
    assert r["method"] == EXACT_METHOD
    assert (r["p_decreasing"], r["p_increasing"], r["p"]) == (pytest.approx(1 / 3), 1.0, pytest.approx(2 / 3))


def test_hollander_wolfe_example_6_2() -> None:
    """Hollander, Wolfe & Chicken, Nonparametric Statistical Methods (3rd ed.), Example 6.2 (Hundal's
    motivation data, Table 6.6): J = 79 (U12 = 22, U13 = 30.5, U23 = 26.5), E0(J) = 54, tie-corrected
    Var0(J) = 150.29, J* = 2.04 (normal p 0.0207). The book's exact p, P0(J ≥ 79) = 0.0231 from its table
    for sizes (6, 6, 6) (NSM3's cJCK(.0231, c(6,6,6), "Exact") is 79), is the distribution without
    ties: the distinct values 1..18 reproduce it. With the data's ties the permutation p is 0.02097."""
    a, b, c = [40, 35, 38, 43, 44, 41], [38, 40, 47, 44, 40, 42], [48, 40, 45, 43, 46, 44]
    r = jonckheere_terpstra([a, b, c])
    assert (r["J"], r["mean"]) == (79.0, 54.0)
    assert r["var"] == pytest.approx(150.29, abs=0.005) and r["z"] == pytest.approx(2.04, abs=0.005)
    assert r["method"] == EXACT_METHOD and r["p_increasing"] == pytest.approx(0.020966, abs=1e-6)
    assert jonckheere_terpstra([a, b, c], exact=False)["p_increasing"] == pytest.approx(0.0207, abs=5e-5)
    distinct = jt_null_counts([list(range(6)), list(range(6, 12)), list(range(12, 18))])
    total = sum(distinct.values())
    assert total == factorial(18) // factorial(6) ** 3
    assert sum(n for j2, n in distinct.items() if j2 >= 2 * 79) / total == pytest.approx(0.0231, abs=5e-5)


def test_sachs_example_exact_equals_enumeration() -> None:
    """Sachs (1997, p. 402), three groups of five, no ties, J = 59: normal p 0.01156; every one of
    the 756,756 assignments enumerated gives P(J ≥ 59) = 0.0119642 (the exact one reported)."""
    a, b, c = [106, 114, 116, 127, 145], [110, 125, 143, 148, 151], [136, 139, 149, 160, 184]
    r = jonckheere_terpstra([a, b, c])
    assert r["method"] == EXACT_METHOD and r["J"] == 59.0
    assert r["p_increasing"] == pytest.approx(0.011964226249940535, rel=1e-12)
    assert jonckheere_terpstra([a, b, c], exact=False)["p_increasing"] == pytest.approx(0.01156, abs=1e-5)
    # reversing the order turns the increasing alternative into the decreasing one
    assert jonckheere_terpstra([c, b, a])["p_decreasing"] == pytest.approx(r["p_increasing"], rel=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_equals_brute_force_enumeration_with_ties(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [rng.randint(1, 3) for _ in range(rng.randint(2, 4))]
    levels = rng.choice([[0.0, 1.0], [0.0, 0.5, 1.0], [0.0, 1 / 3, 2 / 3, 1.0], list(range(9))])
    values = [float(rng.choice(levels)) for _ in range(sum(sizes))]
    groups, at = [], 0
    for m in sizes:
        groups.append(values[at:at + m])
        at += m
    counts = brute_counts(values, sizes)
    assert jt_null_counts(groups) == counts
    assert sum(counts.values()) == factorial(len(values)) // prod(factorial(m) for m in sizes)
    observed = twice_j(groups)
    total = sum(counts.values())
    low = sum(n for j2, n in counts.items() if j2 <= observed) / total
    high = sum(n for j2, n in counts.items() if j2 >= observed) / total
    assert exact_tails(groups, observed / 2) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))


def test_past_the_budget_the_normal_approximation() -> None:
    groups = [list(range(i * 20, i * 20 + 20)) for i in range(3)]  # distinct values, n = 60
    assert exact_tails(groups, 800.0) is None
    r = jonckheere_terpstra(groups)
    assert r["method"] == NORMAL_METHOD and r == jonckheere_terpstra(groups, exact=False)
    assert exact_tails(groups[:2], 200.0, max_steps=EXACT_MAX_STEPS) is not None  # n = 40 in two groups
