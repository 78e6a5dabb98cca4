"""Types of the optional C loops (src/drsearch/index/_kernels.c)."""

from typing import Any

import numpy.typing as npt

def accumulate(acc: npt.NDArray[Any], chunks: npt.NDArray[Any], impacts: npt.NDArray[Any], /) -> float: ...
def collect(acc: npt.NDArray[Any], threshold: float, blocked: npt.NDArray[Any] | None,
            out_chunks: npt.NDArray[Any], out_scores: npt.NDArray[Any], /) -> int: ...
