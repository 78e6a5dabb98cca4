"""Exact FTS5 ``bm25()`` ranking from precomputed impacts, with numpy.

FTS5 scores a row for an OR of phrases as ``sum_i idf_i * (f_i*(k1+1)) / (f_i + k1*(1 - b +
b*D/avgdl))`` summed in phrase order in double precision, where ``idf = ln((N-n+0.5)/(n+0.5))``
floored at 1e-6, ``D`` the row's token count and ``avgdl`` the table's mean. The build stores
each (term, chunk) impact computed with that expression, operation for operation, so our sums
in phrase order are bit-identical to ``-bm25()``.

Terms in at least half of the chunks have their IDF clamped to 1e-6 and add at most 2.2e-6
each: they are kept out of the first pass (they are stored as dense tf arrays, not postings),
and only the candidates within that margin of the k-th document are rescored exactly with
every term in phrase order, so the ordered result still equals FTS5's.

Ranking runs in the optional C kernel when it was built, window by window of chunk rowids in
an L2-sized buffer, windows following the postings (rowid ranges without any cost nothing):
``_kernels.rank_maxscore`` (exact dynamic pruning, by default for queries whose postings are
few: MaxScore's split over the terms' stored upper bounds ``max_impact``, made again in each
window over the stored *block maxima* — each run of 64 postings' largest impact, schema
version 2 — which also skip whole windows whose bounds cannot reach the k-th score; a
version-1 file, without block maxima, prunes with the per-term bounds alone) or
``_kernels.rank_blocks`` (every posting); else in numpy (``np.add.at`` into a whole-corpus
array, then thresholds). Pruning only ever skips what cannot reach the top k, and every
survivor is rescored exactly in phrase order, so every path returns bit-identical results,
ties included (the tests run them all; docs/ENGINE.md). A query of one short sparse list
(at most ONE_LIST_POSTINGS postings in C, SINGLE_TERM_POSTINGS in numpy) skips all of that:
its scores are its impacts, each document's best one taken in one pass (``rank_one``) or
sorted in plain Python (``Scorer._rank_one``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from .errors import DrsearchError, QueryTimeoutError
from .memory import hugepage_zeros
from .schema import BLOCK_POSTINGS, block_count

# The C kernel's interface this module calls (its ABI constant): 2 = rank_maxscore takes block
# maxima, 3 = read_blobs (the engine's page reader), 4 = snippets, chunk texts and term rows,
# 5 = fts5_doclists (the build reads its postings from FTS5's index), 6 = blob_pieces (document
# fields read from the file's pages), 7 = the ranking kernels' `paged` lists (posting lists
# ranked where they lie in the file's pages), 8 = texts_snippets (a complete search's chunk texts
# and snippets in one call without the GIL), make_hits' texts and snippets, and rescore (the
# exact rescoring beside clamped terms), 9 = the ranking kernels' and rescore's `texts` (a
# complete search's chunk texts and snippets made in the call that ranks them), 10 = their
# `rescore` (the rescoring beside clamped terms in the ranking's call), 11 = their `texts`'
# optional `hits` (make_hits' buffers), 12 = gil_stats (a thread's time without the GIL and
# waiting to take it back: the benchmark's account of the serial part), 13 = gil_spin (a
# thread back from its GIL-free work polls the GIL before it sleeps), 14 = search_hits (a
# complete search's ranking, texts, snippet plan and hits in one call). A kernel built
# from an older _kernels.c
# (a checkout updated without rebuilding it) is not used: ranking falls back to numpy (same
# results) and posting lists are read by blob I/O, and native=True says why.
KERNEL_ABI = 14


def kernel_problem(module: object) -> str | None:
    """Why a compiled ``_kernels`` module cannot be used by this code (None: it can)."""
    abi = getattr(module, "ABI", 1)
    if abi != KERNEL_ABI:
        return (f"drsearch.index._kernels is stale (interface {abi}, this drsearch calls "
                f"{KERNEL_ABI}): rebuild it (python setup.py build_ext --inplace, or reinstall)")
    return None


_NOT_BUILT = "drsearch.index._kernels was not built (no C compiler at install?)"
try:
    from . import _kernels
except ImportError:  # built without a C compiler: numpy does the same work, slower
    _kernels = None  # type: ignore[assignment]
    _KERNEL_PROBLEM: str | None = _NOT_BUILT
else:
    _KERNEL_PROBLEM = kernel_problem(_kernels)
    if _KERNEL_PROBLEM is not None:
        _kernels = None  # type: ignore[assignment]


def native_kernels() -> Any | None:
    """The compiled ``_kernels`` module this code can call, or None (not built, or stale)."""
    return _kernels


def gil_poll_ns(ns: int | None = None) -> int:
    """The longest a thread back from the kernel's GIL-free work polls for the GIL before it
    sleeps in CPython's wait (nanoseconds; default 200,000), and with ``ns`` set it for every
    thread of the process (0: never poll; at most 100 ms, since a poller does not ask the GIL's
    holder to switch). Returns the bound before the call; -1 where there is no polling (no
    kernel, or a CPython whose GIL the kernel cannot read). Why: docs/ENGINE.md, "Threads".
    Raises ValueError for a negative ``ns`` or one over 100 ms."""
    if ns is not None and not 0 <= ns <= 100_000_000:
        raise ValueError(f"gil_poll_ns: {ns} ns is not within 0 and 100,000,000 (100 ms)")
    kernels = native_kernels()
    if kernels is None:
        return -1
    return int(kernels.gil_spin(-1 if ns is None else ns))


Pruning = Literal["auto", "always", "never"]
PRUNING: tuple[Pruning, ...] = ("auto", "always", "never")
IDF_FLOOR = 1e-6
# Chunks per block of the native ranking (rank_blocks' window; the kernel takes it from the
# score buffer's length): 128 KiB of scores, an eighth of this machine's 1 MiB L2, leaving room
# for the streamed postings and chunk_doc. Measured against 8K/32K/64K with kernel_ab.py on the
# benchmark's 1x and 4x lists (benchmarks/HISTORY.md, "Window sizes"): against 32K, 16K runs a
# single list 4-11% faster and whole queries at 0.96-1.02x; 8K loses 6% on whole queries at 4x
# (more windows, each paying two gallops per list), 64K is 5-12% slower. No score changes: a
# chunk's sum is the same additions in the same order whatever the window.
BLOCK_ROWS = 1 << 14
NATIVE_AVAILABLE = _kernels is not None
# With block maxima, c-auto prunes every query of k up to PRUNE_ALL_K in a corpus of at least
# PRUNE_ALL_ROWS chunks (8 of the kernel's 16,384-rowid pruning windows of several lists;
# docs/ENGINE.md).
PRUNE_ALL_K = 10
PRUNE_ALL_ROWS = 1 << 17
# A query of one sparse term with at most this many postings skips the ranking machinery
# (docs/ENGINE.md, "One-term fast path"): in plain Python (its postings sorted by impact) up
# to SINGLE_TERM_POSTINGS, where for a handful of postings the kernel's call and numpy's
# per-call costs are most of the work; with the C kernel, one pass of _kernels.rank_one (each
# document's best chunk into a k-heap) up to ONE_LIST_POSTINGS, where it costs less than the
# windowed kernel's setup (measured in docs/ENGINE.md, "One-term fast path").
SINGLE_TERM_POSTINGS = 32
ONE_LIST_POSTINGS = 16384
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
# A ranking's chunk texts and snippets made by the kernel with it (Scorer.rank_texts), or None.
Made = tuple[list[str], list[str | None]] | None


def _made(got: Any) -> Made:
    """The kernel's texts and snippets made with a ranking: None when the deadline passed (or
    the ranking's: QueryTimeoutError), False when reading them failed (a damaged text: None,
    and the caller reads them again by ``texts_snippets``, which reports it as such)."""
    if got is None:
        raise QueryTimeoutError("query ran past its time limit")
    return None if got is False else cast(Made, got)


def _arrays(t: Term) -> SparseTerm | DenseTerm:
    """A paged term read into arrays; any other term as it is."""
    return t.read() if isinstance(t, PagedTerm) else t


# Scorer's pruning choice as search_hits takes it (its `pruning`: the same rule as _prunes)
_PRUNING_CODES = {"auto": 0, "always": 1, "never": 2}


class Scratch:
    """One thread's reusable arrays: the zeroed score accumulator and the collect buffers
    (one huge-page-friendly block)."""

    __slots__ = ("acc", "block", "out_chunks", "out_scores")

    def __init__(self, n_rows: int) -> None:
        n = n_rows + 1
        mem = hugepage_zeros(8 * (BLOCK_ROWS + 3 * n))
        self.block: F64 = mem[: 8 * BLOCK_ROWS].view(np.float64)  # rank_blocks' score buffer
        rest = mem[8 * BLOCK_ROWS :]
        # The collect buffers first, the numpy path's accumulator last: the C kernel writes
        # only the buffers' first entries, so in C the accumulator's pages are never touched
        # (a huge page straddling two arrays is resident as soon as either is written).
        self.out_chunks: I64 = rest[: 8 * n].view(np.int64)
        self.out_scores: F64 = rest[8 * n : 16 * n].view(np.float64)
        self.acc: F64 = rest[16 * n :].view(np.float64)


class Scorer:
    """Scores queries against one index's per-chunk arrays (shared, read-only)."""

    def __init__(self, chunk_doc: npt.NDArray[np.int32], chunk_len: npt.NDArray[np.int32],
                 k1: float = 1.2, b: float = 0.75, *, native: bool | None = None,
                 pruning: Pruning = "auto", block_postings: int | None = BLOCK_POSTINGS) -> None:
        """``native``: rank in C (None: when built; True: require it; False: numpy only).
        ``pruning``, in C: ``always`` skips what cannot reach the top k (exact MaxScore over
        the terms' stored upper bounds and block maxima, ``rank_maxscore``), ``never``
        scores every posting window by window (``rank_blocks``), ``auto`` (the default)
        picks per query what is cheaper: pruning when the query's postings are fewer than a
        quarter of the chunks (its cost follows them) or, with block maxima, when k <= 10 in
        a corpus of 131,072 chunks or more; else every posting (a sequential pass over long
        lists of similar weight). Same results, bit for bit.

        ``block_postings``: how many postings each of a list's ``block_max`` covers (the
        file's ``meta.block_postings``; None: no list has block maxima, a version-1 file).

        The C kernel reads a document's chunks as consecutive rowids (how build() assigns
        them); a file laid out otherwise ranks with numpy.
        """
        if native and _kernels is None:
            raise DrsearchError(_KERNEL_PROBLEM or _NOT_BUILT)
        use_c = _kernels is not None if native is None else native
        self._native = use_c and bool(np.all(chunk_doc[2:] >= chunk_doc[1:-1]))
        if pruning not in PRUNING:
            raise ValueError(f"pruning must be one of {', '.join(PRUNING)}, got {pruning!r}")
        self._pruning = pruning
        self.block_postings = block_postings
        self.chunk_doc = chunk_doc
        self._chunk_doc32 = np.ascontiguousarray(chunk_doc, dtype=np.int32)
        self.n_rows = len(chunk_len) - 1  # index 0 is unused: rowids start at 1
        # The lengths, not their norms (half the bytes): only clamped-IDF (dense) terms need
        # a norm at query time, computed for the rows they score (bitwise the same values).
        self._chunk_len = chunk_len
        self._chunk_len32 = np.ascontiguousarray(chunk_len, dtype=np.int32)  # the C rescoring's
        self._avgdl = mean_chunk_len(chunk_len)
        self.k1, self.b = k1, b
        self.k1p1 = k1 + 1.0
        # The one-term fast path's limit (:meth:`_rank_one`; 0 turns it off, as the tests
        # do to check it against the other paths).
        self.single_term_postings = ONE_LIST_POSTINGS if self._native else SINGLE_TERM_POSTINGS
        self._chunk_doc_view = self._chunk_doc32.data.cast("B").cast("i")

    @property
    def native(self) -> bool:
        """Whether the C kernel ranks (and so takes :class:`PagedTerm` lists as they lie)."""
        return self._native

    @property
    def kind(self) -> str:
        """Which ranking path runs: ``c-auto`` (the C kernel, with exact pruning where it
        pays), ``c-maxscore`` (always pruning), ``c-blocks`` (every posting) or ``numpy``."""
        if not self._native:
            return "numpy"
        return {"auto": "c-auto", "always": "c-maxscore", "never": "c-blocks"}[self._pruning]

    def scratch(self) -> Scratch:
        """Fresh per-thread scratch arrays for :meth:`rank`."""
        return Scratch(self.n_rows)

    def kernel_context(self, blocked: Bools | None, scratch: Scratch) -> tuple[Any, ...]:
        """The scorer's part of ``_kernels.search_hits``' context for one thread (``scratch``:
        its arrays): (n_rows, blocked, chunk_doc, buf, out_chunks, out_scores), then after the
        file, (block_postings, pruning, prune_all_k, prune_all_rows), as the kernel's ranking
        calls take them from :meth:`rank_texts` (its choice of pruning: :meth:`_prunes`)."""
        return ((self.n_rows, blocked, self._chunk_doc32, scratch.block, scratch.out_chunks,
                 scratch.out_scores),
                (self.block_postings or 0, _PRUNING_CODES[self._pruning], PRUNE_ALL_K, PRUNE_ALL_ROWS))

    def rank(self, terms: Sequence[Term | None], k: int, blocked: Bools | None, scratch: Scratch,
             deadline: float) -> list[tuple[int, float]]:
        """Top ``k`` documents as (best chunk rowid, score), in FTS5's order.

        ``scratch`` comes from :meth:`scratch` (one per thread); its accumulator is handed
        back zeroed. ``blocked`` marks chunk rowids that must not be returned.
        Raises QueryTimeoutError.
        """
        return self.rank_texts(terms, k, blocked, scratch, deadline, None)[0]

    def rank_texts(self, terms: Sequence[Term | None], k: int, blocked: Bools | None, scratch: Scratch,
                   deadline: float, texts: tuple[Any, ...] | None) -> tuple[list[tuple[int, float]], Made]:
        """:meth:`rank`, and with ``texts`` (the kernel's ``texts`` argument: the mapped file,
        its chunk text column and the snippets' stems, SnippetMaker.texts_args) the ranked
        chunks' texts and snippets (a snippet None where the Python code must make it), made
        in the kernel call that ranks them, without the GIL: a thread serving complete
        searches then takes the GIL back once a query, not after each call. None for them
        where another path ranked (numpy, a one-term query): the caller reads them.
        Raises QueryTimeoutError."""
        present = [t for t in terms if t is not None]
        if not present:
            return [], None
        if len(present) == 1:
            one = present[0]
            if isinstance(one, SparseTerm | PagedTerm) and one.df <= self.single_term_postings:
                one = _arrays(one)
                assert isinstance(one, SparseTerm)
                return self._rank_one(one, k, blocked), None
        if self._native:
            lists = [t for t in present if isinstance(t, SparseTerm | PagedTerm)]
            return self._rank_native(present, lists, k, blocked, scratch, deadline, texts)
        return self._rank_numpy([_arrays(t) for t in present], k, blocked, scratch, deadline), None

    def _rank_numpy(self, present: Sequence[SparseTerm | DenseTerm], k: int, blocked: Bools | None,
                    scratch: Scratch, deadline: float) -> list[tuple[int, float]]:
        """:meth:`rank` in numpy: the whole-corpus accumulator."""
        sparse = [t for t in present if isinstance(t, SparseTerm)]
        acc = scratch.acc
        try:
            if sparse:
                top = self._accumulate(sparse, acc, deadline)
                cand, scores, n_docs = self._select(acc, top, k, blocked)
                if len(sparse) == len(present):
                    return self._finish(cand, scores, k)  # already exact
                # Dense terms add at most `bound` to any chunk: rescoring exactly every chunk
                # within bound (+ rounding) of the k-th document's first-pass score is exact.
                bound = (len(present) - len(sparse)) * IDF_FLOOR * self.k1p1
                if n_docs >= k:
                    cut = float(scores.min())
                    eps = abs(cut) * 1e-9
                    if cut > bound + 2 * eps:
                        cand, _ = self._above(acc, cut - bound - 2 * eps, blocked)
                        return self._finish(cand, self._rescore(cand, present), k)
                acc.fill(0.0)
            # Scores so low that dense terms matter everywhere: score every term fully.
            top = self._accumulate(present, acc, deadline)
            cand, scores, _ = self._select(acc, top, k, blocked)
            return self._finish(cand, scores, k)
        finally:
            acc.fill(0.0)  # hand the scratch array back clean, even on timeout

    def _rank_native(self, present: Sequence[Term], sparse: Sequence[ListTerm], k: int,
                     blocked: Bools | None, scratch: Scratch, deadline: float,
                     texts: tuple[Any, ...] | None) -> tuple[list[tuple[int, float]], Made]:
        """:meth:`rank_texts` in C, window by window in an L2-sized score buffer
        (``rank_maxscore`` or ``rank_blocks``), paged lists read where they lie."""
        out_c, out_s = scratch.out_chunks, scratch.out_scores
        if len(sparse) == len(present):  # the usual case: the lists as stored, in one pass
            n, _, _, made = self._run(sparse, k, -1.0, blocked, scratch, deadline, texts)
            return list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True)), made
        if sparse:
            # With clamped-IDF (dense) terms, collect every chunk within their bound (+
            # rounding) of the k-th document's first-pass score, then rescore those exactly:
            # in the same kernel call when every term can be read there (the tfs of clamped
            # terms in the pages), the test below made by the kernel (query_settled).
            bound = (len(present) - len(sparse)) * IDF_FLOOR * self.k1p1
            args = self.rescore_args(present, len(sparse))
            if args is not None:
                got = self._run_rescored(sparse, k, bound, blocked, scratch, deadline, texts, args[0])
                if got is not None:
                    return got
            else:
                n, n_full, cut, _ = self._run(sparse, k, bound, blocked, scratch, deadline, None)
                if n_full >= k and cut > bound + 2 * (abs(cut) * 1e-9):
                    return self._rescore_native(out_c[:n], present, k, texts)
        # Every term, in phrase order (with dense terms: scores so low that they matter).
        lists = [t if isinstance(t, PagedTerm) else self._as_list(t) for t in present]
        n, _, _, made = self._run(lists, k, -1.0, blocked, scratch, deadline, texts)
        return list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True)), made

    def rescore_args(self, present: Sequence[Term], n_lists: int) -> tuple[tuple[Any, ...], float] | None:
        """The kernel's ``rescore`` argument and margin for a query of ``present`` terms of which
        ``n_lists`` have posting lists (the others clamped): what :meth:`_rank_native` hands its
        kernel call beside clamped terms, or None where a clamped term's tfs are not in the
        file's pages (that path then picks or loads them)."""
        terms = self._rescore_terms(present, None)
        if terms is None:
            return None
        spec, file = terms
        return ((spec, file, self._chunk_len32, self.k1, self.b, self._avgdl, self.k1p1, IDF_FLOOR,
                 self._chunk_doc32), (len(present) - n_lists) * IDF_FLOOR * self.k1p1)

    def _rescore_terms(self, terms: Sequence[Term], cand: I64 | None) -> tuple[list[Any], Any] | None:
        """The kernel's rescoring terms (``_kernels.rescore``'s spec) and the file they are left
        in: lists where they lie, clamped terms' tfs from their BLOB's pages, else (their tfs
        picked or loaded here) the candidates' tfs, which need ``cand`` (None then: no spec).
        Raises ValueError for terms left in more than one file."""
        spec: list[tuple[Any, ...]] = []
        files: list[Any] = []
        rows: I64 | None = None
        for t in terms:
            if isinstance(t, PagedTerm):
                spec.append((0, t.df, t.pieces))
                files.append(t.file)
            elif isinstance(t, SparseTerm):
                spec.append((1, t.chunks, t.impacts))
            elif t.paged is not None and t._tfs is None:
                spec.append((2, t.paged[1]))
                files.append(t.paged[0])
            elif cand is None:
                return None
            else:
                rows = cand.copy() if rows is None else rows
                spec.append((3, np.ascontiguousarray(t.tfs_at(rows, self.n_rows), dtype=np.uint16)))
        if any(f is not files[0] for f in files):  # the kernel reads one file (an engine's)
            raise ValueError("terms left in more than one file")
        return spec, files[0] if files else b""

    def _run_rescored(self, lists: Sequence[ListTerm], k: int, bound: float, blocked: Bools | None,
                      scratch: Scratch, deadline: float, texts: tuple[Any, ...] | None,
                      rescore: tuple[Any, ...]) -> tuple[list[tuple[int, float]], Made] | None:
        """The candidates within ``bound`` of the k-th document's first-pass score over
        ``lists``, rescored exactly by every term (``rescore``: :meth:`rescore_args`) in the
        same kernel call, and with ``texts`` the texts of the k chunks it keeps: the ranking
        and its texts, or None when the candidates do not settle the top k (the kernel's
        ``query_settled``, the test of :meth:`_rank_native`). Raises QueryTimeoutError."""
        _, _, _, got = self._run(lists, k, bound, blocked, scratch, deadline, texts, rescore)
        assert isinstance(got, tuple)
        ranked, made = got
        if ranked is None:
            return None
        return ranked, None if texts is None else _made(made)

    def _run(self, lists: Sequence[ListTerm], k: int, margin: float, blocked: Bools | None,
             scratch: Scratch, deadline: float, texts: tuple[Any, ...] | None = None,
             rescore: tuple[Any, ...] | None = None) -> tuple[int, int, float, Any]:
        """One kernel call over these lists (phrase order): (chunks out, of them the k best
        documents' own, the k-th document's score, with ``texts`` (margin < 0) the chunks'
        texts and snippets (:data:`Made`); with ``rescore`` (margin >= 0) instead the kernel's
        (ranked, made) of the exact rescoring, as they come (:meth:`_run_rescored`)).
        Raises QueryTimeoutError."""
        assert _kernels is not None
        budget = deadline - time.monotonic()
        if budget <= 0.0:
            raise QueryTimeoutError("query ran past its time limit")
        chunks: list[npt.NDArray[np.uint32] | None] = []
        impacts: list[F64 | None] = []
        block_max: list[F64 | None] = []
        tables: list[tuple[int, bytes] | None] = []
        file = None
        if all(type(t) is PagedTerm for t in lists):  # the usual case, in fewer steps (GIL held)
            on_pages = cast("list[PagedTerm]", lists)
            tables = [(t.df, t.pieces) for t in on_pages]
            chunks, impacts, block_max = [None] * len(lists), [None] * len(lists), [None] * len(lists)
            file = on_pages[0].file if on_pages else None
        else:
            for t in lists:
                if isinstance(t, PagedTerm):
                    chunks.append(None)
                    impacts.append(None)
                    block_max.append(None)
                    tables.append((t.df, t.pieces))
                    file = t.file
                else:
                    chunks.append(t.chunks)
                    impacts.append(t.impacts)
                    block_max.append(t.block_max)
                    tables.append(None)
        paged = None if file is None else (file, tables)
        if self._prunes(sum(t.df for t in lists), k):
            bounds = np.array([t.max_impact for t in lists], dtype=np.float64)
            got = _kernels.rank_maxscore(
                chunks, impacts, bounds, self.n_rows, blocked, self._chunk_doc32, k, margin,
                scratch.block, scratch.out_chunks, scratch.out_scores, budget, None,
                block_max if self.block_postings else None, self.block_postings or 0, paged, texts,
                rescore)
        else:
            got = _kernels.rank_blocks(
                chunks, impacts, self.n_rows, blocked, self._chunk_doc32, k, margin, scratch.block,
                scratch.out_chunks, scratch.out_scores, budget, paged, texts, rescore)
        n, n_full, cut = got[:3]
        if n < 0:
            raise QueryTimeoutError("query ran past its time limit")
        if rescore is not None:
            return n, n_full, cut, got[3:]
        return n, n_full, cut, None if texts is None else _made(got[3])

    def _rank_one(self, t: SparseTerm, k: int, blocked: Bools | None) -> list[tuple[int, float]]:
        """:meth:`rank` for a query of one short sparse list: a chunk's score is its impact
        (FTS5's sum of one phrase: 0.0 + impact, the same bits), so the answer is the
        postings by (impact descending, rowid ascending), each document's first one, not
        blocked, the first ``k``. In C (``rank_one``: one pass, documents' chunks being
        consecutive rowids) on the native path, else sorted here; negation is exact, so the
        sort key gives the score back."""
        if self._native:
            assert _kernels is not None
            return _kernels.rank_one(t.chunks, t.impacts, self.n_rows, blocked, self._chunk_doc32, k)
        chunks = t.chunks.tolist()
        # The kernel's checks of a posting list (strictly ascending, rowids 1..n_rows): a
        # damaged file is a ValueError (CorruptIndexError to the caller) here as there.
        if not (chunks[0] > 0 and chunks[-1] <= self.n_rows
                and all(a < b for a, b in itertools.pairwise(chunks))):
            raise ValueError("posting list not ascending or out of range")
        ranked = sorted(zip([-x for x in t.impacts.tolist()], chunks, strict=True))
        hidden = () if blocked is None else {c for c, b in zip(chunks, blocked[t.chunks].tolist(),
                                                                strict=True) if b}
        doc = self._chunk_doc_view
        seen: set[int] = set()
        out: list[tuple[int, float]] = []
        for neg, c in ranked:
            d = doc[c]
            if d in seen or c in hidden:
                continue
            seen.add(d)
            out.append((c, -neg))
            if len(out) == k:
                break
        return out

    def _as_list(self, t: SparseTerm | DenseTerm) -> SparseTerm:
        """A term's postings as a sparse list (a dense term's non-zero rows)."""
        if isinstance(t, SparseTerm):
            return t
        rows, impacts, top, block_max = self._postings_of(t)
        return SparseTerm(t.term, len(rows), rows, impacts, top, block_max)

    def _postings_of(self, t: SparseTerm | DenseTerm) -> Lists:
        """A term as (ascending chunk rowids, impacts, their maximum, block maxima); a dense
        term's zero-tf chunks add exactly +0.0, so leaving them out changes no sum."""
        if isinstance(t, SparseTerm):
            return t.chunks, t.impacts, t.max_impact, t.block_max
        impacts = self._dense_impacts(t)
        rows = np.flatnonzero(impacts)
        nonzero = impacts[rows]
        block_max = _NO_BLOCKS
        if self.block_postings and block_count(len(rows), self.block_postings):
            block_max = np.maximum.reduceat(nonzero, np.arange(0, len(rows), self.block_postings))
        return rows.astype(np.uint32), nonzero, float(impacts.max(initial=0.0)), block_max

    def _prunes(self, n_postings: int, k: int) -> bool:
        """Whether this query runs on the pruning kernel (``rank_maxscore``): always when its
        postings are fewer than a quarter of the chunks (its cost then follows them), and
        with block maxima also for k <= PRUNE_ALL_K in a corpus of at least PRUNE_ALL_ROWS
        chunks (a small k's floor is high enough that whole windows are skipped and long light
        lists only probed; a small corpus has too few windows to skip); else every posting."""
        if self._pruning != "auto":
            return self._pruning == "always"
        if self.block_postings and k <= PRUNE_ALL_K and self.n_rows >= PRUNE_ALL_ROWS:
            return True
        return 4 * n_postings < self.n_rows

    def _dense_impacts(self, t: DenseTerm, rows: I64 | None = None) -> F64:
        tf = (t.tfs if rows is None else t.tfs_at(rows, self.n_rows)).astype(np.float64)
        return term_impacts(IDF_FLOOR, tf, self.norms(rows), self.k1p1)

    def norms(self, rows: I64 | None = None) -> F64:
        """``k1 * (1 - b + b*D/avgdl)`` of each chunk rowid in ``rows`` (None: every rowid,
        index 0 unused), as the build computed the impacts."""
        lengths = self._chunk_len if rows is None else self._chunk_len[rows]
        return chunk_norms(lengths, self.k1, self.b, self._avgdl)

    def _accumulate(self, terms: Sequence[SparseTerm | DenseTerm], acc: F64, deadline: float) -> float:
        """Add each term's impacts into ``acc``, in phrase order (FTS5's summation order);
        returns the largest score."""
        for t in terms:
            if time.monotonic() > deadline:
                raise QueryTimeoutError("query ran past its time limit")
            if isinstance(t, SparseTerm):
                np.add.at(acc, t.chunks, t.impacts)
            else:  # tf = 0 adds exactly +0.0, as FTS5's sum does for a non-matching phrase
                acc += self._dense_impacts(t)
        return float(acc.max())

    @staticmethod
    def _above(acc: F64, threshold: float, blocked: Bools | None) -> tuple[I64, F64]:
        """Scored chunks (acc > 0) with acc >= threshold, not blocked, ascending."""
        idx = np.flatnonzero(acc >= threshold) if threshold > 0.0 else np.flatnonzero(acc)
        if blocked is not None:
            idx = idx[~blocked[idx]]
        return idx, acc[idx]

    def _select(self, acc: F64, top: float, k: int,
                blocked: Bools | None) -> tuple[I64, F64, int]:
        """Chunks scoring at least the k-th best document (all scored chunks if fewer docs).

        Tries thresholds at falling fractions of the best score first: a comparison over the
        dense array is far cheaper than extracting and partitioning every scored chunk.
        """
        if top <= 0.0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64), 0
        for frac in (0.5, 0.25, 0.1, 0.0):
            idx, scores = self._above(acc, top * frac, blocked)
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
            if len(first) >= k:
                cut = scores[order[np.sort(first)[k - 1]]]
                return sel[scores[sel] >= cut], len(first)
            if m >= m_all:
                return sel, len(first)
            m = min(m_all, m * 4)

    def _rescore_native(self, cand: I64, terms: Sequence[Term], k: int,
                        texts: tuple[Any, ...] | None = None) -> tuple[list[tuple[int, float]], Made]:
        """``_finish(cand, _rescore(cand, terms), k)`` in one C call (``_kernels.rescore``: the
        same scores and order, bit for bit, without a numpy call per term): lists read where
        they lie, clamped terms' tfs from their BLOB's pages (else picked here). ``cand``:
        ascending chunk rowids. With ``texts``, the chunks' texts and snippets too."""
        assert _kernels is not None
        got = self._rescore_terms(terms, cand)
        assert got is not None
        spec, file = got
        args = (cand.astype(np.uint32), spec, file, self._chunk_len32, self.k1,
                self.b, self._avgdl, self.k1p1, IDF_FLOOR, self._chunk_doc32, k)
        if texts is None:
            return _kernels.rescore(*args), None
        ranked, made = _kernels.rescore(*args, texts)
        return ranked, _made(made)

    def _rescore(self, cand: I64, terms: Sequence[Term]) -> F64:
        """Exact scores of candidate chunks (ascending): every term, in phrase order."""
        out = np.zeros(len(cand), dtype=np.float64)
        # The lists' own dtype: searching uint32 rowids for int64 keys would first convert
        # the whole list (a copy of every posting's rowid, per term).
        keys = cand.astype(np.uint32)
        picked = np.empty(len(cand), dtype=np.float64)
        for t in terms:
            if isinstance(t, PagedTerm):  # picked where the list lies (absent: +0.0, exact)
                assert _kernels is not None
                _kernels.paged_pick(t.file, t.df, t.pieces, keys, picked)
                out += picked
            elif isinstance(t, SparseTerm):
                pos = np.minimum(np.searchsorted(t.chunks, keys), len(t.chunks) - 1)
                out += np.where(t.chunks[pos] == keys, t.impacts[pos], 0.0)
            else:
                out += self._dense_impacts(t, cand)
        return out

    def _finish(self, chunks: I64, scores: F64, k: int) -> list[tuple[int, float]]:
        order = np.lexsort((chunks, -scores))
        chunks, scores = chunks[order], scores[order]
        _, first = np.unique(self.chunk_doc[chunks], return_index=True)
        first = np.sort(first)[:k]
        return list(zip(chunks[first].tolist(), scores[first].tolist(), strict=True))


__all__ = ["IDF_FLOOR", "NATIVE_AVAILABLE", "PRUNING", "DenseTerm", "ListTerm", "PagedTerm", "Pruning",
           "Scorer", "Scratch", "SparseTerm", "Term", "bm25_idf", "chunk_norms", "gil_poll_ns",
           "term_impacts"]
