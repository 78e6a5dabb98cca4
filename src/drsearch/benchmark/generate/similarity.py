"""Cosine similarities with a boundary that does not depend on floating-point noise.

Vectors are cast to float64 and ℓ2-normalised; every cosine is then rounded to
:data:`DECIMALS` decimal places before it is compared with a threshold. Summation order
and the last bits of a norm then cannot move an item across a threshold: a pair whose
exact cosine is 0.90 compares as 0.90 (float64 alone may give 0.8999999999999999), while
0.8999 stays below. Embedding models give about 7 significant digits, so 9 decimals
keep every distinction the vectors actually carry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

DECIMALS = 9


def as_matrix(vectors: Any, n: int | None = None) -> np.ndarray[Any, np.dtype[np.float64]]:
    """``vectors`` (n × d, any real dtype) as float64 rows of unit length; ValueError for a zero
    vector, a non-finite value or a row count other than ``n``."""
    m = np.asarray(vectors, dtype=np.float64)
    if m.ndim != 2:
        raise ValueError(f"expected an n x d matrix, got shape {m.shape}")
    if n is not None and m.shape[0] != n:
        raise ValueError(f"{m.shape[0]} vectors for {n} ids")
    if not np.all(np.isfinite(m)):
        raise ValueError("a vector has a non-finite value")
    norms = np.linalg.norm(m, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"vector {int(np.argmin(norms))} is zero (no direction)")
    unit: np.ndarray[Any, np.dtype[np.float64]] = m / norms[:, None]
    return unit


def cosine_matrix(vectors: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
    """All pairwise cosines, rounded to :data:`DECIMALS` places (diagonal 1)."""
    m = as_matrix(vectors)
    sims = np.clip(m @ m.T, -1.0, 1.0)
    out: np.ndarray[Any, np.dtype[np.float64]] = np.round(sims, DECIMALS)
    return out


def check_ids(ids: Sequence[Any]) -> None:
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate ids")


__all__ = ["DECIMALS", "as_matrix", "check_ids", "cosine_matrix"]
