"""Exact FTS5 ``bm25()`` ranking from precomputed posting lists, with numpy.

FTS5 scores a row for an OR of phrases as ``sum_i idf_i * (f_i*(k1+1)) / (f_i + k1*(1 - b +
b*D/avgdl))`` summed in phrase order in double precision, where ``idf = ln((N-n+0.5)/(n+0.5))``
floored at 1e-6, ``D`` the row's token count and ``avgdl`` the table's mean. We evaluate the
same expression, operation for operation, so scores are bit-identical to ``-bm25()``.

Terms whose IDF is clamped (in at least half of the chunks) add at most ``2.2e-6`` each; the
first pass skips them, and the candidates near the cut-off are then rescored exactly with
every term in phrase order, so the ordered result still equals FTS5's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .errors import QueryTimeoutError

IDF_FLOOR = 1e-6

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class TermPostings:
    """One query term's posting list (chunk rowids ascending, term frequencies)."""

    term: str
    df: int
    chunks: npt.NDArray[np.uint32]
    tfs: npt.NDArray[np.uint16]


def bm25_idf(n_rows: int, df: int) -> float:
    idf = math.log((n_rows - df + 0.5) / (df + 0.5))
    return idf if idf > 0.0 else IDF_FLOOR


class Scorer:
    """Scores queries against one index's per-chunk arrays (shared, read-only)."""

    def __init__(self, chunk_doc: npt.NDArray[np.int32], chunk_len: npt.NDArray[np.int32],
                 k1: float = 1.2, b: float = 0.75) -> None:
        self.chunk_doc = chunk_doc
        self.n_rows = len(chunk_len) - 1  # index 0 is unused: rowids start at 1
        total = int(chunk_len.sum())
        avgdl = float(total) / float(self.n_rows) if self.n_rows else 1.0
        d = chunk_len.astype(np.float64)
        # k1 * (1 - b + b*D/avgdl), evaluated in FTS5's operation order.
        self.norm: F64 = k1 * ((1.0 - b) + (b * d) / avgdl)
        self.k1p1 = k1 + 1.0

    def impacts(self, p: TermPostings, idf: float, chunks: npt.NDArray[np.int64] | None = None,
                tf: F64 | None = None) -> F64:
        ids = p.chunks if chunks is None else chunks
        f = p.tfs.astype(np.float64) if tf is None else tf
        return idf * ((f * self.k1p1) / (f + self.norm[ids]))

    def rank(self, terms: Sequence[TermPostings | None], k: int,
             blocked: npt.NDArray[np.bool_] | None, acc: F64,
             deadline: float) -> list[tuple[int, float]]:
        """Top ``k`` documents as (best chunk rowid, score), in FTS5's order.

        ``acc`` is a zeroed float64 scratch array of ``n_rows + 1`` entries, returned zeroed.
        ``blocked`` marks chunk rowids that must not be returned. Raises QueryTimeoutError.
        """
        present = [t for t in terms if t is not None]
        if not present:
            return []
        idfs = {t.term: bm25_idf(self.n_rows, t.df) for t in present}
        main = [t for t in present if idfs[t.term] > IDF_FLOOR]
        try:
            if 0 < len(main) < len(present):
                self._accumulate(main, idfs, acc, deadline)
                cand, scores, n_docs = self._select(acc, k, blocked)
                # Clamped terms add at most `bound` to any chunk: rescoring exactly every chunk
                # within bound (+ rounding) of the k-th document's first-pass score is exact.
                bound = (len(present) - len(main)) * IDF_FLOOR * self.k1p1
                if n_docs >= k:
                    cut = float(scores.min())
                    eps = abs(cut) * 1e-9
                    if cut > bound + 2 * eps:
                        cand = np.flatnonzero(acc >= cut - bound - 2 * eps)
                        if blocked is not None:
                            cand = cand[~blocked[cand]]
                        return self._finish(cand, self._rescore(cand, present, idfs), k)
                acc.fill(0.0)
            self._accumulate(present, idfs, acc, deadline)
            cand, scores, _ = self._select(acc, k, blocked)
            return self._finish(cand, scores, k)
        finally:
            acc.fill(0.0)  # hand the scratch array back clean, even on timeout

    def _accumulate(self, terms: Sequence[TermPostings], idfs: dict[str, float], acc: F64,
                    deadline: float) -> None:
        """Add each term's impacts into ``acc``, in phrase order (FTS5's summation order)."""
        for t in terms:
            if time.monotonic() > deadline:
                raise QueryTimeoutError("query ran past its time limit")
            np.add.at(acc, t.chunks, self.impacts(t, idfs[t.term]))

    def _select(self, acc: F64, k: int, blocked: npt.NDArray[np.bool_] | None
                ) -> tuple[I64, F64, int]:
        """Chunks scoring at least the k-th best document (all scored chunks if fewer docs).

        Tries thresholds at falling fractions of the best score first: a comparison over the
        dense array is far cheaper than extracting and partitioning every scored chunk.
        """
        top = float(acc.max())
        if top <= 0.0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64), 0
        for frac in (0.5, 0.25, 0.1, 0.0):
            idx = np.flatnonzero(acc >= top * frac) if frac else np.flatnonzero(acc)
            if blocked is not None:
                idx = idx[~blocked[idx]]
            scores = acc[idx]
            sel, n_docs = self._top_docs(idx, scores, k)
            if n_docs >= k or not frac:
                return idx[sel], scores[sel], n_docs
        raise AssertionError("unreachable")

    def _top_docs(self, touched: I64, scores: F64, k: int) -> tuple[I64, int]:
        """Indices into ``touched`` of every chunk scoring at least the k-th best document,
        and how many distinct documents were seen (fewer than k: every chunk is returned)."""
        m_all = len(touched)
        m = min(m_all, 4 * k)
        while True:
            if m < m_all:
                thr = np.partition(scores, m_all - m)[m_all - m]
                sel = np.flatnonzero(scores >= thr)
            else:
                sel = np.arange(m_all)
            order = sel[np.lexsort((touched[sel], -scores[sel]))]
            _, first = np.unique(self.chunk_doc[touched[order]], return_index=True)
            if len(first) >= k or m >= m_all:
                if len(first) >= k:
                    kth = np.sort(first)[k - 1]
                    cut = scores[order[kth]]
                    return sel[scores[sel] >= cut], len(first)
                return sel, len(first)
            m = min(m_all, m * 4)

    def _rescore(self, cand: I64, terms: Sequence[TermPostings], idfs: dict[str, float]) -> F64:
        out = np.zeros(len(cand), dtype=np.float64)
        for t in terms:  # phrase order, as FTS5 sums
            pos = np.searchsorted(t.chunks, cand)
            pos_c = np.minimum(pos, len(t.chunks) - 1)
            hit = t.chunks[pos_c] == cand
            tf = np.where(hit, t.tfs[pos_c], 0).astype(np.float64)
            out += self.impacts(t, idfs[t.term], cand, tf)
        return out

    def _finish(self, chunks: I64, scores: F64, k: int) -> list[tuple[int, float]]:
        order = np.lexsort((chunks, -scores))
        chunks, scores = chunks[order], scores[order]
        _, first = np.unique(self.chunk_doc[chunks], return_index=True)
        first = np.sort(first)[:k]
        return list(zip(chunks[first].tolist(), scores[first].tolist(), strict=True))


__all__ = ["IDF_FLOOR", "Scorer", "TermPostings", "bm25_idf"]
