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
``_kernels.rank_blocks`` (every posting), called through :mod:`drsearch.index.native`; else
in numpy (``np.add.at`` into a whole-corpus array, then thresholds:
:class:`~drsearch.index.reference.NumpyRanking`, which Scorer inherits). Pruning only ever
skips what cannot reach the top k, and every survivor is rescored exactly in phrase order, so
every path returns bit-identical results,
ties included (the tests run them all; docs/ENGINE.md). A query of one short sparse list
(at most ONE_LIST_POSTINGS postings in C, SINGLE_TERM_POSTINGS in numpy) skips all of that:
its scores are its impacts, each document's best one taken in one pass (``rank_one``) or
sorted in plain Python (``NumpyRanking._rank_one_python``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from ..contract.errors import DrsearchError, QueryTimeoutError
from . import native as kernel
from . import reference
from .memory import hugepage_zeros
from .reference import NumpyRanking
from .schema import BLOCK_POSTINGS, block_count
from .terms import (
    _NO_BLOCKS,
    F64,
    I64,
    IDF_FLOOR,
    Bools,
    DenseTerm,
    Lists,
    ListTerm,
    PagedTerm,
    SparseTerm,
    Term,
    bm25_idf,
    chunk_norms,
    mean_chunk_len,
    term_impacts,
)

Pruning = Literal["auto", "always", "never"]
PRUNING: tuple[Pruning, ...] = ("auto", "always", "never")
# Chunks per block of the native ranking (rank_blocks' window; the kernel takes it from the
# score buffer's length): 128 KiB of scores, an eighth of this machine's 1 MiB L2, leaving room
# for the streamed postings and chunk_doc. Measured against 8K/32K/64K with kernel_ab.py on the
# benchmark's 1x and 4x lists (benchmarks/HISTORY.md, "Window sizes"): against 32K, 16K runs a
# single list 4-11% faster and whole queries at 0.96-1.02x; 8K loses 6% on whole queries at 4x
# (more windows, each paying two gallops per list), 64K is 5-12% slower. No score changes: a
# chunk's sum is the same additions in the same order whatever the window.
BLOCK_ROWS = 1 << 14
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


class Scorer(NumpyRanking):
    """Scores queries against one index's per-chunk arrays (shared, read-only)."""

    def __init__(self, chunk_doc: npt.NDArray[np.int32], chunk_len: npt.NDArray[np.int32],
                 k1: float = 1.2, b: float = 0.75, *, native: bool | None = None,
                 pruning: Pruning = "auto", block_postings: int | None = BLOCK_POSTINGS,
                 avgdl: float | None = None) -> None:
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

        ``avgdl``: the corpus' mean chunk length where ``chunk_len`` is not the whole corpus
        (a shard: drsearch.index.shards); None: the mean of ``chunk_len``.

        The C kernel reads a document's chunks as consecutive rowids (how build() assigns
        them); a file laid out otherwise ranks with numpy.
        """
        if native and not kernel.available():
            raise DrsearchError(kernel.problem())
        use_c = kernel.available() if native is None else native
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
        self._avgdl = mean_chunk_len(chunk_len) if avgdl is None else avgdl
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
        return self._rescore_arg(*terms), (len(present) - n_lists) * IDF_FLOOR * self.k1p1

    def _rescore_arg(self, spec: list[Any], file: Any) -> tuple[Any, ...]:
        """``kernel.rescore_arg`` of these terms' ``spec`` left in ``file`` with this scorer's
        BM25 parameters and arrays."""
        return kernel.rescore_arg(spec, file, self._chunk_len32, self.k1, self.b, self._avgdl,
                                  self.k1p1, IDF_FLOOR, self._chunk_doc32)

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
            got = kernel.rank_maxscore(
                chunks, impacts, bounds, self.n_rows, blocked, self._chunk_doc32, k, margin,
                scratch.block, scratch.out_chunks, scratch.out_scores, budget,
                block_max if self.block_postings else None, self.block_postings or 0, paged, texts,
                rescore)
        else:
            got = kernel.rank_blocks(
                chunks, impacts, self.n_rows, blocked, self._chunk_doc32, k, margin, scratch.block,
                scratch.out_chunks, scratch.out_scores, budget, paged, texts, rescore)
        n, n_full, cut = got[:3]
        if n < 0:
            raise QueryTimeoutError("query ran past its time limit")
        if rescore is not None:
            return n, n_full, cut, got[3:]
        return n, n_full, cut, None if texts is None else _made(got[3])

    def rank_quantized(self, lists: Sequence[tuple[Any, Any, F64]], unit: float, k: int,
                       blocked: Bools | None) -> list[tuple[int, float]]:
        """:meth:`rank` of ``lists`` (phrase order; (rowids, quants, impacts) with quants * unit
        >= impacts: drsearch.index.quantized), traversed over the quants and rescored exactly
        (``rank_quant`` in C, its numpy twin without the kernel): the same answer, bit for bit."""
        if not lists:
            return []
        if self._native:
            return kernel.rank_quant(lists, unit, self.n_rows, blocked, self._chunk_doc32, k)
        return reference.rank_quant(lists, unit, self.n_rows, blocked, self.chunk_doc, k)

    def _rank_one(self, t: SparseTerm, k: int, blocked: Bools | None) -> list[tuple[int, float]]:
        """:meth:`rank` for a query of one short sparse list: a chunk's score is its impact
        (FTS5's sum of one phrase: 0.0 + impact, the same bits), so the answer is the
        postings by (impact descending, rowid ascending), each document's first one, not
        blocked, the first ``k``. In C (``rank_one``: one pass, documents' chunks being
        consecutive rowids) on the native path, else sorted here; negation is exact, so the
        sort key gives the score back."""
        if self._native:
            return kernel.rank_one(t.chunks, t.impacts, self.n_rows, blocked, self._chunk_doc32, k)
        return self._rank_one_python(t, k, blocked)

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

    def _rescore_native(self, cand: I64, terms: Sequence[Term], k: int,
                        texts: tuple[Any, ...] | None = None) -> tuple[list[tuple[int, float]], Made]:
        """``_finish(cand, _rescore(cand, terms), k)`` in one C call (``_kernels.rescore``: the
        same scores and order, bit for bit, without a numpy call per term): lists read where
        they lie, clamped terms' tfs from their BLOB's pages (else picked here). ``cand``:
        ascending chunk rowids. With ``texts``, the chunks' texts and snippets too."""
        got = self._rescore_terms(terms, cand)
        assert got is not None
        arg = self._rescore_arg(*got)
        if texts is None:
            return cast("list[tuple[int, float]]", kernel.rescore(cand.astype(np.uint32), arg, k)), None
        ranked, made = cast("tuple[list[tuple[int, float]], Any]",
                            kernel.rescore(cand.astype(np.uint32), arg, k, texts))
        return ranked, _made(made)

__all__ = ["IDF_FLOOR", "PRUNING", "DenseTerm", "ListTerm", "PagedTerm", "Pruning",
           "Scorer", "Scratch", "SparseTerm", "Term", "bm25_idf", "chunk_norms", "term_impacts"]
