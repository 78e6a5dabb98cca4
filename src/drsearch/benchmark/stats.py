"""Small, pure statistics for grading: intervals, paired tests, pass@k, agreement.

Every function takes plain counts or sequences and returns plain floats, so the
numbers can be checked against an independent implementation (the tests use
statsmodels as the oracle). scipy supplies the distributions; it is imported on first use
(``import scipy.stats`` costs about a second, and this module is imported by every
``drsearch`` command that builds the CLI's parser, most of which never need it).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Sequence
from functools import cache
from typing import Any


@cache
def _scipy_stats() -> Any:
    """``scipy.stats`` (the grading extra), imported once on first use."""
    from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs

    return stats


def _check_count(successes: float, n: int) -> None:
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    ``successes`` may be fractional: ``n · m`` for the mean ``m`` of ``n`` values in
    ``[0, 1]`` (pass@k, mean@k over questions). Such a mean's variance is at most
    ``m(1 − m)/n``, the binomial one, so the interval is then conservative.

    With ``p = successes / n`` and ``z = Φ⁻¹(1 − (1 − confidence) / 2)``::

        centre = (p + z²/2n) / (1 + z²/n)
        half   = z · sqrt(p(1 − p)/n + z²/4n²) / (1 + z²/n)

    and the interval is ``[centre − half, centre + half]`` clipped to ``[0, 1]``
    (the clip only removes floating-point dust: the exact bounds already lie there).
    ``n == 0`` carries no information, so the interval is the whole ``(0.0, 1.0)``.
    Raises ``ValueError`` unless ``0 <= successes <= n`` and ``0 < confidence < 1``.
    """
    _check_count(successes, n)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if n == 0:
        return (0.0, 1.0)
    z = float(_scipy_stats().norm.ppf(1.0 - (1.0 - confidence) / 2.0))
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for discordant counts ``b`` and ``c``.

    Under the null each discordant pair is equally likely to fall either way, so
    ``b ~ Binomial(b + c, 1/2)``; the p-value is scipy's two-sided exact binomial
    test of ``b`` successes in ``b + c`` trials (for p = 1/2 this is
    ``min(1, 2 · P[X <= min(b, c)])``). No discordant pairs (``b == c == 0``) → 1.0.
    Raises ``ValueError`` on a negative count.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    return min(1.0, float(_scipy_stats().binomtest(b, b + c, 0.5, alternative="two-sided").pvalue))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` attempts of which ``c`` were correct.

    ``pass@k = 1 − C(n − c, k) / C(n, k)``: the probability that at least one of
    ``k`` attempts drawn without replacement from the ``n`` is correct. Computed in
    the product form ``1 − Π_{i = n−c+1}^{n} (1 − k / i)``, which never forms the
    large binomials; it is exactly 1.0 when ``n − c < k``.
    Raises ``ValueError`` unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_count(c, n)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def mean_at_k(correct: Sequence[bool], k: int) -> float:
    """mean@k for one question: the fraction correct among its first ``k`` attempts.

    ``correct`` lists the attempts in attempt order (a missing attempt is False).
    Raises ``ValueError`` unless ``1 <= k <= len(correct)``.
    """
    if not 1 <= k <= len(correct):
        raise ValueError(f"need 1 <= k <= {len(correct)}, got k={k}")
    return sum(1 for hit in correct[:k] if hit) / k


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa between two raters labelling the same items.

    ``κ = (p_o − p_e) / (1 − p_e)`` with ``p_o`` the observed agreement and
    ``p_e = Σ_label p_a(label) · p_b(label)`` the agreement expected from the raters'
    marginals. When both raters give every item the same single label, ``p_e = 1``
    and κ is 0/0; they agree perfectly, so this returns 1.0 (``p_e = 1`` forces
    ``p_o = 1``, so no disagreeing case reaches that branch).
    Raises ``ValueError`` on empty input or sequences of different lengths.
    """
    if len(a) != len(b):
        raise ValueError(f"rater sequences differ in length: {len(a)} != {len(b)}")
    if not a:
        raise ValueError("cohen_kappa needs at least one item")
    n = len(a)
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected >= 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman rank correlation (ties get average ranks), via ``scipy.stats.spearmanr``.

    Returns ``None`` where the coefficient is undefined: fewer than two pairs, or
    either sequence constant (scipy would return NaN with a warning).
    Raises ``ValueError`` on sequences of different lengths.
    """
    if len(x) != len(y):
        raise ValueError(f"sequences differ in length: {len(x)} != {len(y)}")
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho = float(_scipy_stats().spearmanr(list(x), list(y)).statistic)
    return None if math.isnan(rho) else rho
