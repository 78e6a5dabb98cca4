"""Exact int8 inner products of a query with every row of a vector matrix: the dense
retriever's scan, in the C kernel where it is built (AVX2 or SSE2, picked at run time) and in
numpy where it is not. Both give the same float64 scores, bit for bit (tests/dense/
test_dense_scan.py): each score is ``(float64(integer inner product) * row scale) * query
scale``, the integer exact on either path."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from . import native as kernel
from . import reference
from .terms import F64, Bools


def dense_scores(matrix: npt.NDArray[np.int8], query: npt.NDArray[np.int8], scales: F64, q_scale: float,
                 hidden: Bools | None, out: F64, *, native: bool | None = None) -> None:
    """Every row's score into ``out`` (``hidden`` rows: -inf). ``matrix`` (rows, dimension)
    C-contiguous int8; ``native`` None takes the kernel where it is available, True or False
    forces a path (tests). Raises ValueError for inconsistent shapes."""
    if native is None:
        native = kernel.available()
    if native:
        kernel.dense_scores(matrix, query, scales, q_scale, hidden, out)
    else:
        reference.dense_scores(matrix, query, scales, q_scale, hidden, out)


def dense_path() -> str:
    """The path :func:`dense_scores` takes here: ``avx2``, ``baseline`` (the kernel's SSE2
    copy) or ``numpy``."""
    return kernel.dense_isa()


__all__ = ["dense_path", "dense_scores"]
