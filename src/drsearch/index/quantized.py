"""Posting lists with 8-bit quantised impacts, for the exact ranking traversed over them
(``_kernels.rank_quant``, its numpy twin ``reference.rank_quant``; docs/ENGINE.md, "Traversal
over quantised impacts").

The file stores float64 impacts; an engine opened with ``EngineOptions(quantized=True)``
quantises a term's list the first time a query needs it, with one unit for the whole index
(its largest stored impact over 255, so that the quantised sums of different terms add up in
one scale), and keeps (rowids, quants, impacts) by term name, at most ``max_bytes`` of them
(when full it starts over: bounded memory, never another answer). The quants are upper bounds
(``terms.quantize``): the traversal prunes no document of the true top k, and the survivors
are rescored from the float64 impacts, so the answer is FTS5's bm25() bit for bit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .terms import F64, DenseTerm, PagedTerm, SparseTerm, quant_unit, quantize

# (ascending chunk rowids, quants, exact impacts): one list as rank_quant takes it.
QuantList = tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint8], F64]
QUANT_CACHE_BYTES = 64 << 20
QUANT_MAX_LISTS = 256  # _k_quant.h's: more lists than this rank on the exact paths


class QuantLists:
    """A term's quantised list, made once and kept by name (bounded); shared by threads."""

    def __init__(self, max_impact: float, max_bytes: int = QUANT_CACHE_BYTES) -> None:
        self.unit = quant_unit(max_impact)
        self._max_bytes = max_bytes
        self._kept: dict[str, QuantList] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def of(self, terms: Sequence[SparseTerm | PagedTerm | DenseTerm],
           as_list: Callable[[SparseTerm | DenseTerm], SparseTerm]) -> list[QuantList]:
        """Each term's (rowids, quants, impacts) in phrase order; ``as_list`` turns a term
        into a sparse list (a clamped term: its non-zero rows). Raises ValueError for an
        impact above the index's largest (a damaged term row)."""
        out: list[QuantList] = []
        for t in terms:
            got = self._kept.get(t.term)
            if got is None:
                got = self._make(t, as_list)
            out.append(got)
        return out

    def _make(self, t: SparseTerm | PagedTerm | DenseTerm,
              as_list: Callable[[SparseTerm | DenseTerm], SparseTerm]) -> QuantList:
        s = as_list(t.read() if isinstance(t, PagedTerm) else t)
        rows = np.array(s.chunks, dtype=np.uint32)  # a copy: the arena's views are per query
        impacts = np.array(s.impacts, dtype=np.float64)
        got: QuantList = (rows, quantize(impacts, self.unit), impacts)
        size = 13 * len(rows)
        with self._lock:
            if self._bytes + size > self._max_bytes:
                self._kept.clear()
                self._bytes = 0
            if size <= self._max_bytes:
                self._kept[t.term] = got
                self._bytes += size
        return got

    def __len__(self) -> int:
        return len(self._kept)

    def stats(self) -> dict[str, Any]:
        return {"terms": len(self._kept), "bytes": self._bytes, "unit": self.unit}
