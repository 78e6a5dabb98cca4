"""The query terms the ranking takes and FTS5's BM25 arithmetic, shared by the ranking
(:mod:`drsearch.index.scoring`), its pure-Python reference (:mod:`drsearch.index.reference`)
and the build.

A term is a :class:`SparseTerm` (a posting list as arrays), a :class:`PagedTerm` (a posting list
left in the index file's pages, which the C kernel ranks where it lies) or a :class:`DenseTerm`
(a clamped-IDF term's tf array, loaded only if needed).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

IDF_FLOOR = 1e-6
# A clamped-IDF term's tfs at up to max(DENSE_PICK_MIN, chunks >> DENSE_PICK_SHIFT) candidate
# rowids are read one by one (about 1.4 us each) rather than by loading its whole array of
# two bytes per chunk (about 100 us at 243,615 chunks; more in a larger corpus).
DENSE_PICK_MIN = 16
DENSE_PICK_SHIFT = 12

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]
# One list as the C kernel takes it: rowids, impacts, bound, block maxima.
Lists = tuple[npt.NDArray[np.uint32], F64, float, F64]
_NO_BLOCKS: F64 = np.empty(0, dtype=np.float64)
_NO_BLOCKS.flags.writeable = False


def bm25_idf(n_rows: int, df: int) -> float:
    """FTS5's IDF (natural log via libm, floored at 1e-6)."""
    idf = math.log((n_rows - df + 0.5) / (df + 0.5))
    return idf if idf > 0.0 else IDF_FLOOR


def mean_chunk_len(chunk_len: npt.NDArray[np.int32]) -> float:
    """avgdl: the mean length of the chunks (rowids 1..; index 0 unused), as FTS5 takes it."""
    n_rows = len(chunk_len) - 1
    return float(int(chunk_len.sum())) / float(n_rows) if n_rows else 1.0


def chunk_norms(chunk_len: npt.NDArray[np.int32], k1: float, b: float,
                avgdl: float | None = None) -> F64:
    """``k1 * (1 - b + b*D/avgdl)`` per entry of ``chunk_len`` (per chunk rowid, index 0
    unused, or any selection of them with the corpus' ``avgdl``), in FTS5's operation order:
    elementwise, so a selection's norms are bitwise those of the whole array."""
    if avgdl is None:
        avgdl = mean_chunk_len(chunk_len)
    return k1 * ((1.0 - b) + (b * chunk_len.astype(np.float64)) / avgdl)


def term_impacts(idf: F64 | float, tf: F64, norm: F64, k1p1: float) -> F64:
    """``idf * ((tf*(k1+1)) / (tf + norm))``: one term's BM25 contribution, as FTS5 computes it."""
    return idf * ((tf * k1p1) / (tf + norm))


QUANT_LEVELS = 255  # 8-bit quantised impacts: 1..255 (a posting's impact is never 0)


def quant_unit(max_impact: float) -> float:
    """The impact of one quantisation step for impacts up to ``max_impact`` (the largest of
    the index or of the lists quantised together): a hair above max/255, so that the largest
    impact quantises to 255, not 256, whatever the rounding of the division."""
    if not max_impact > 0.0:
        raise ValueError(f"max_impact must be positive, got {max_impact!r}")
    return max_impact / QUANT_LEVELS * (1.0 + 1e-12)


def quantize(impacts: F64, unit: float) -> npt.NDArray[np.uint8]:
    """Each impact's 8-bit upper bound: the smallest q with ``q * unit >= impact`` (rounded
    up, then checked in float64 and raised where the product fell short), so that a sum of
    quants times ``unit`` never undercuts the exact score: a traversal over them prunes no
    document of the true top k. Raises ValueError for an impact above 255 units."""
    q = np.ceil(impacts / unit)
    q[q * unit < impacts] += 1.0
    if len(q) and (float(q.max()) > QUANT_LEVELS or float(q.min()) < 0.0):
        raise ValueError("an impact is outside 0..255 quantisation units")
    return q.astype(np.uint8)


@dataclass(frozen=True, slots=True)
class SparseTerm:
    """A query term with its postings: chunk rowids (ascending) and exact impacts."""

    term: str
    df: int
    chunks: npt.NDArray[np.uint32]
    impacts: F64
    max_impact: float  # the largest impact in the list: MaxScore's bound (rank_maxscore)
    # The largest impact of each run of ``block_postings`` postings (schema version 2), or
    # empty (a list of one block, or a version-1 file): block-max pruning's bounds.
    block_max: F64 = field(default_factory=lambda: _NO_BLOCKS)


@dataclass(frozen=True, slots=True)
class PagedTerm:
    """A sparse query term whose posting list stays in the index file's pages: the C kernel
    ranks it where it lies, with no copy. ``pieces`` is ``_kernels.blob_pieces``' table of
    its posting BLOB (df impacts, df rowids, its block maxima) in ``file`` (the mapped file's
    whole pages); ``read()`` returns it as a :class:`SparseTerm` (copied into the calling
    thread's arena at each call, valid until its next query) for the paths that need arrays:
    numpy and the one-term pass. Nothing in it belongs to one query: an engine keeps it across
    queries."""

    term: str
    df: int
    max_impact: float
    file: memoryview
    pieces: bytes
    read: Callable[[], SparseTerm]


@dataclass(slots=True)
class DenseTerm:
    """A clamped-IDF query term: a dense tf array over chunk rowids, loaded only if needed.

    ``pick`` (optional) reads the tfs of a few rowids without loading the whole array (one
    array is two bytes per chunk: a copy that costs more than reading the few entries the
    exact rescoring of a handful of candidates needs)."""

    term: str
    df: int
    load: Callable[[], npt.NDArray[np.uint16]]
    pick: Callable[[I64], npt.NDArray[np.uint16]] | None = None
    # (file, blob_pieces' table of its tf BLOB): the array left in the file's pages, where the
    # C rescoring reads the candidates' tfs (none: they are picked or loaded here).
    paged: tuple[Any, bytes] | None = field(default=None, repr=False)
    _tfs: npt.NDArray[np.uint16] | None = field(default=None, repr=False)

    @property
    def tfs(self) -> npt.NDArray[np.uint16]:
        if self._tfs is None:
            self._tfs = self.load()
        return self._tfs

    def tfs_at(self, rows: I64, n_rows: int) -> npt.NDArray[np.uint16]:
        """The tfs of ``rows`` (chunk rowids, any order): picked one by one when they are
        few for a corpus of ``n_rows`` chunks (DENSE_PICK_SHIFT) and nothing is loaded yet,
        else from the whole array."""
        if self._tfs is None and self.pick is not None and \
                len(rows) <= max(DENSE_PICK_MIN, n_rows >> DENSE_PICK_SHIFT):
            return self.pick(rows)
        return self.tfs[rows]


Term = SparseTerm | PagedTerm | DenseTerm
ListTerm = SparseTerm | PagedTerm  # a term with a posting list (not clamped)


__all__ = ["DENSE_PICK_MIN", "DENSE_PICK_SHIFT", "IDF_FLOOR", "DenseTerm", "ListTerm", "PagedTerm",
           "SparseTerm", "Term", "bm25_idf", "chunk_norms", "mean_chunk_len", "term_impacts"]
