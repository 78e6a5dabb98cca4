"""Types of the optional C loops (src/drsearch/index/_kernels.c)."""

from collections.abc import Sequence
from typing import Any

import numpy.typing as npt

def accumulate(acc: npt.NDArray[Any], chunks: npt.NDArray[Any], impacts: npt.NDArray[Any], /) -> float: ...
def collect(acc: npt.NDArray[Any], threshold: float, blocked: npt.NDArray[Any] | None,
            out_chunks: npt.NDArray[Any], out_scores: npt.NDArray[Any], /) -> int: ...
def select_top(acc: npt.NDArray[Any], top: float, blocked: npt.NDArray[Any] | None,
               chunk_doc: npt.NDArray[Any], k: int, margin: float, out_chunks: npt.NDArray[Any],
               out_scores: npt.NDArray[Any], /) -> tuple[int, int, float]: ...
def rank_blocks(chunks: Sequence[npt.NDArray[Any]], impacts: Sequence[npt.NDArray[Any]], n_rows: int,
                blocked: npt.NDArray[Any] | None, chunk_doc: npt.NDArray[Any], k: int, margin: float,
                buf: npt.NDArray[Any], out_chunks: npt.NDArray[Any], out_scores: npt.NDArray[Any],
                time_budget: float, /) -> tuple[int, int, float]: ...
