"""The pure-Python (and numpy) twins of the C kernel: the fallback where the kernel is not
available (not built, or stale: :mod:`drsearch.index.native`) and the tests' oracle of each C
path (the same results, bit for bit, and the same ValueError messages where the input is
damaged). The pattern is bm25s' ``numba/`` folder: one place for the other implementation.

- :class:`NumpyRanking`: ``Scorer``'s ranking in numpy (a whole-corpus accumulator, then
  thresholds; the exact rescoring beside clamped terms; the one-term pass sorted in Python),
  the twin of ``rank_blocks``/``rank_maxscore``/``rank_one``/``rescore``; :func:`rank_quant`,
  the twin of ``rank_quant`` (the traversal over 8-bit quantised impacts).
- :class:`PythonSnippets`: ``SnippetMaker``'s snippet of one text, the twin of
  ``snippets``/``texts_snippets``, which leave it the texts they cannot take.
- :func:`dense_scores`: the dense retriever's exact int8 inner products in numpy, the twin of
  ``dense_scores``.
- :func:`decode_pages`: FTS5's leaf pages decoded into postings, the twin of ``fts5_doclists``
  (with :func:`varint`, ``get_varint`` of ``_pages.h``, which the segment reader uses too).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..contract.errors import QueryTimeoutError
from . import native as kernel
from .terms import F64, I64, IDF_FLOOR, Bools, DenseTerm, PagedTerm, SparseTerm, Term

if TYPE_CHECKING:
    from .scoring import Scratch

MAX_KEY = 65536  # _fts5.h's FTS5_MAX_KEY
QUANT_SLACK = 2e-9  # _k_quant.h's: the relative slack on every quantised bound
ELLIPSIS = "…"  # where a snippet leaves text out


class NumpyRanking:
    """``Scorer``'s ranking without the kernel (a mixin: the scorer's arrays and norms)."""

    chunk_doc: npt.NDArray[np.int32]
    n_rows: int
    k1p1: float
    _chunk_doc_view: Any  # chunk_doc as a memoryview of ints (a lookup per posting)

    def _dense_impacts(self, t: DenseTerm, rows: I64 | None = None) -> F64:
        raise NotImplementedError  # the scorer's

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

    def _rescore(self, cand: I64, terms: Sequence[Term]) -> F64:
        """Exact scores of candidate chunks (ascending): every term, in phrase order."""
        out = np.zeros(len(cand), dtype=np.float64)
        # The lists' own dtype: searching uint32 rowids for int64 keys would first convert
        # the whole list (a copy of every posting's rowid, per term).
        keys = cand.astype(np.uint32)
        picked = np.empty(len(cand), dtype=np.float64)
        for t in terms:
            if isinstance(t, PagedTerm):  # picked where the list lies (absent: +0.0, exact)
                kernel.paged_pick(t.file, t.df, t.pieces, keys, picked)
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

    def _rank_one_python(self, t: SparseTerm, k: int, blocked: Bools | None) -> list[tuple[int, float]]:
        """``Scorer._rank_one`` sorted here (the kernel's ``rank_one`` in Python): the postings
        by (impact descending, rowid ascending), each document's first one, not blocked, the
        first ``k``; negation is exact, so the sort key gives the score back."""
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


class PythonSnippets:
    """``SnippetMaker``'s snippet of one text in Python (a mixin: the maker's plan)."""

    width: int
    deadline: float | None
    _stems: list[str]
    _weights: dict[str, float]

    def _many_python(self, texts: list[str]) -> list[str]:
        """Each text's snippet made here, checking the deadline before each."""
        out = []
        for text in texts:
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise QueryTimeoutError("query ran past its time limit")
            out.append(self(text))
        return out

    def __call__(self, text: str) -> str:
        if len(text) <= self.width:
            return text
        start = self._best_start(text)
        end = min(len(text), start + self.width)
        if end < len(text):
            cut = text.rfind(" ", start, end)
            end = cut if cut > start else end
        body = text[start:end].strip()
        return (ELLIPSIS if start > 0 else "") + body + (ELLIPSIS if end < len(text) else "")

    def _best_start(self, text: str) -> int:
        if not self._stems:
            return 0
        hits = self._matches(text)
        if not hits:
            return 0
        best_score, best_pos, total, lo = -1.0, 0, 0.0, 0
        for pos, weight in hits:  # two pointers: matches within [pos - width + 1, pos]
            total += weight
            while hits[lo][0] <= pos - self.width:
                total -= hits[lo][1]
                lo += 1
            if total > best_score + 1e-12:
                best_score, best_pos = total, hits[lo][0]
        # Start a little before the first match, at a word boundary.
        start = max(0, best_pos - self.width // 6)
        if start > 0:
            space = text.find(" ", start, best_pos)
            start = space + 1 if space >= 0 else best_pos
        return start


    def _matches(self, text: str) -> list[tuple[int, float]]:
        """(offset, weight) of every query-term match at a word start, in text order."""
        low = text.lower()
        if len(low) != len(text):  # rare: case mapping changed lengths; match on the original
            pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, self._stems)) + ")",
                                 re.IGNORECASE)
            return [(m.start(), self._weights.get(m.group(0).lower(), 0.0))
                    for m in pattern.finditer(text)]
        taken: dict[int, float] = {}
        deadline = self.deadline
        for i, stem in enumerate(self._stems):  # longest first: a position keeps its most specific match
            if deadline is not None and not i % 16 and time.monotonic() > deadline:
                raise QueryTimeoutError("query ran past its time limit")
            weight = self._weights[stem]
            pos = low.find(stem)
            while pos >= 0:
                if (pos == 0 or not low[pos - 1].isalnum()) and pos not in taken:
                    taken[pos] = weight
                pos = low.find(stem, pos + 1)
        return sorted(taken.items())


def varint(data: bytes, at: int, end: int) -> tuple[int, int]:
    """SQLite's varint at ``data[at]`` not reading at or past ``end``: (value, length), length
    0 when it runs past ``end`` (as ``get_varint`` in _pages.h)."""
    v = 0
    for i in range(9):
        if at + i >= end:
            return 0, 0
        b = data[at + i]
        if i == 8:
            return (v << 8) | b, 9
        v = (v << 7) | (b & 0x7F)
        if not b & 0x80:
            return v, i + 1
    raise AssertionError("unreachable")


def _positions(data: bytes, start: int, stop: int, run: int) -> tuple[int, int] | None:
    """``fts5_positions``: (positions, run) of data[start:stop), None on a bad varint."""
    count = 0
    for b in data[start:stop]:
        if run == 0 and b < 2:
            return None
        if b & 0x80:
            run += 1
            if run > 4:
                return None
        else:
            run = 0
            count += 1
    return count, run


class _Fail(Exception):
    pass


def decode_pages(pages: Sequence[bytes], first_pgno: int, to_end: bool, chunks: Any, tfs: Any,
                 lengths: Any) -> tuple[list[str], list[int], int]:
    """``_kernels.fts5_doclists`` in Python: the same results, the same ValueError messages
    (checked in the same order; see _fts5.h)."""
    n_rows = len(lengths) - 1
    cap = len(chunks)
    terms: list[str] = []
    dfs: list[int] = []
    key = b""
    have_term = first_in_doclist = False
    run = df = rowid = left = tf = 0
    n_out = 0
    last = len(pages) - 1
    pi, p, q = 0, b"", 0

    def fail(why: str) -> _Fail:
        return _Fail(f"leaf page {first_pgno + pi}, offset {q}: {why}")

    def emit() -> None:
        nonlocal n_out
        if n_out == cap:
            raise fail("more postings than the window's bytes allow")
        chunks[n_out] = rowid
        tfs[n_out] = tf
        n_out += 1
        lengths[rowid] += tf

    def term_done() -> None:
        terms.append(key[1:].decode("utf-8", "replace"))
        dfs.append(df)

    try:
        for pi, p in enumerate(pages):
            q = 0
            size = len(p)
            if size < 4:
                raise fail(f"a page of {size} bytes, shorter than its header")
            first_rowid, szleaf = (p[0] << 8) | p[1], (p[2] << 8) | p[3]
            if szleaf < 4 or szleaf > size or (first_rowid and (first_rowid < 4 or first_rowid >= szleaf)):
                raise fail(f"header offsets {first_rowid}/{szleaf} outside the page")
            offs: list[int] = []
            x = szleaf
            while x < size:
                v, n = varint(p, x, size)
                at = (offs[-1] if offs else 0) + min(v, 1 << 20)
                if not n or (offs and v == 0) or at < 4 or at >= szleaf:
                    raise fail("the page index names a term outside the page")
                offs.append(at)
                x += n
            ti = 0
            end = szleaf
            q = 4
            if pi == 0:
                if not offs:
                    raise fail("the window's first page starts no term")
                q = offs[0]
            n_terms = len(offs)
            if pi == last and not to_end:
                if not offs:
                    raise fail("the window's last page starts no term")
                end = offs[0]
                n_terms = 0
            rowid_due = bool(first_rowid) and q <= first_rowid < end
            if left:
                avail = (offs[ti] if ti < n_terms else end) - q
                take = min(left, avail)
                got = _positions(p, q, q + take, run)
                if got is None:
                    raise fail("a position list holds a column marker or a position beyond 32 bits")
                tf += got[0]
                run = got[1]
                q += take
                left -= take
                if left:
                    if q != szleaf or first_rowid:
                        raise fail("a position list runs into a term or a rowid")
                    continue
                if run:
                    raise fail("a position list ends inside a varint")
                emit()
            page_rowids = 0
            while q < end:
                off = q
                if ti < n_terms and off == offs[ti]:
                    if have_term and df:
                        term_done()
                    if have_term and not df:
                        raise fail("a term without a doclist")
                    prefix = 0
                    if ti > 0:
                        prefix, n = varint(p, q, end)
                        if not n:
                            raise fail("a term's prefix length runs past the page")
                        q += n
                        if prefix > len(key):
                            raise fail("a term shares more bytes than the previous term has")
                    suffix, n = varint(p, q, end)
                    if not n or suffix == 0 or suffix > end - q - n or prefix + suffix > MAX_KEY:
                        raise fail("a term's length runs past the page")
                    q += n
                    new = key[:prefix] + p[q:q + suffix]
                    if have_term and new <= key:
                        raise fail("terms out of order")
                    key = new
                    q += suffix
                    if key[0] != 0x30:
                        raise fail(f"a key of index {key[0]}, not the main index "
                                   "(prefix indexes are not read)")
                    if len(key) < 2:
                        raise fail("an empty term")
                    have_term = first_in_doclist = True
                    df = 0
                    ti += 1
                    continue
                if not have_term:
                    raise fail("a rowid before any term")
                if not first_in_doclist and not page_rowids and pi > 0 and off != first_rowid:
                    raise fail("the page's first rowid is not where its header says")
                absolute = first_in_doclist or off == first_rowid
                if off == first_rowid:
                    rowid_due = False
                v, n = varint(p, q, end)
                if not n:
                    raise fail("a rowid runs past the page")
                q += n
                if not absolute:  # a delta: 0 or one beyond n_rows is out of order either way
                    v = rowid + v if 0 < v <= n_rows else 0
                following = v if v < 2**63 - 1 else 0
                if following < 1 or following > n_rows or (not first_in_doclist and following <= rowid):
                    raise fail(f"a rowid out of order or outside 1..{n_rows}")
                rowid = following
                first_in_doclist = False
                page_rowids += 1
                header, n = varint(p, q, end)
                if not n:
                    raise fail("a position list's size runs past the page")
                q += n
                if header & 1:
                    raise fail("a delete marker (the index is not a merged, optimized one)")
                if header >> 1 == 0 or header >> 1 > 2**31 - 1:
                    raise fail(f"a position list of {header >> 1} bytes")
                want = header >> 1
                avail = (offs[ti] if ti < n_terms else end) - q
                take = min(want, avail)
                df += 1
                got = _positions(p, q, q + take, 0)
                if got is None:
                    raise fail("a position list holds a column marker or a position beyond 32 bits")
                tf, run = got
                q += take
                if want > take:
                    if q != szleaf or ti < n_terms or pi == last:
                        raise fail("a position list runs into a term or past the window")
                    left = want - take
                    break
                if run:
                    raise fail("a position list ends inside a varint")
                emit()
            if ti < n_terms:
                raise fail("the page index names a term inside a doclist")
            if rowid_due:
                raise fail("no rowid where the page's header says one starts")
        if left:
            raise _Fail("the last position list runs past the window's last page")
        if have_term and not df:
            raise _Fail("the last term has no doclist")
        if have_term:
            term_done()
    except _Fail as e:
        raise ValueError(str(e)) from None
    return terms, dfs, n_out


# Rows a block of dense_scores' numpy pass converts at once (a bounded float copy of the int8 rows).
DENSE_BLOCK = 8192


def dense_scores(matrix: npt.NDArray[np.int8], query: npt.NDArray[np.int8], scales: F64, q_scale: float,
                 hidden: Bools | None, out: F64) -> None:
    """``native.dense_scores`` in numpy, bit for bit: each block of rows as floats times the
    query. Every product is an integer of at most 128² and every partial sum one below 2²⁴
    (float32, up to 1024 dimensions) or 2⁵³ (float64, beyond): exact, whatever order or fused
    multiply-add the BLAS uses, so the sums are the kernel's int32 ones; then the same two
    float64 products in the same order. Raises ValueError for inconsistent shapes."""
    n, d = matrix.shape
    if (query.shape != (d,) or scales.shape != (n,) or out.shape != (n,)
            or (hidden is not None and hidden.shape != (n,)) or d > 65536):
        raise ValueError("dense_scores: inconsistent arguments")
    ftype: type[np.floating[Any]] = np.float32 if d <= 1024 else np.float64
    q: npt.NDArray[np.floating[Any]] = query.astype(ftype)
    for lo in range(0, n, DENSE_BLOCK):
        hi = min(n, lo + DENSE_BLOCK)
        rows: npt.NDArray[np.floating[Any]] = matrix[lo:hi].astype(ftype)
        dots = rows @ q
        np.multiply(dots.astype(np.float64), scales[lo:hi], out=out[lo:hi])
        out[lo:hi] *= q_scale
    if hidden is not None:
        out[hidden] = -np.inf


__all__ = ["DENSE_BLOCK", "ELLIPSIS", "MAX_KEY", "NumpyRanking", "PythonSnippets", "decode_pages",
           "dense_scores", "varint"]


def _exact_at(lists: Sequence[tuple[Any, Any, F64]], rows: I64) -> F64:
    """Every row's exact score: each list's impact there, added in phrase order from 0.0 (a
    list without the row adds +0.0, which leaves the sum's bits as they are), as FTS5 sums."""
    score = np.zeros(len(rows), dtype=np.float64)
    for chunks, _, impacts in lists:
        if not len(chunks):
            continue
        pos = np.minimum(np.searchsorted(chunks, rows), len(chunks) - 1)
        score = score + np.where(chunks[pos] == rows, impacts[pos], 0.0)
    return score


def _best_docs(rows: I64, scores: F64, chunk_doc: npt.NDArray[np.int32], k: int) -> list[tuple[int, float]]:
    """Each document's best row (higher score, then lower rowid), the first k of them in
    that order."""
    order = np.lexsort((rows, -scores))
    _, first = np.unique(chunk_doc[rows[order]], return_index=True)
    keep = order[np.sort(first)[:k]]
    return list(zip(rows[keep].tolist(), scores[keep].tolist(), strict=True))


def rank_quant(lists: Sequence[tuple[Any, Any, F64]], unit: float, n_rows: int, blocked: Bools | None,
               chunk_doc: npt.NDArray[np.int32], k: int) -> list[tuple[int, float]]:
    """The twin of ``_kernels.rank_quant``: the k best documents of ``lists`` (phrase order;
    (chunks, quants, impacts) with quants * unit >= impacts), found over the quants and
    rescored exactly. The quantised sum of every chunk orders them; the best by it are scored
    exactly until k documents are known, whose k-th score is a floor; every chunk whose
    quantised bound (loosened by the kernel's slack) can reach that floor is then scored
    exactly, and those rank. The same answer as the kernel's, bit for bit."""
    qsum = np.zeros(n_rows + 1, dtype=np.int64)
    for chunks, quants, _ in lists:
        np.add.at(qsum, chunks.astype(np.int64), quants.astype(np.int64))
    touched = np.flatnonzero(qsum)
    if blocked is not None:
        touched = touched[~blocked[touched]]
    if not len(touched):
        return []
    by_bound = touched[np.argsort(-qsum[touched], kind="stable")]
    m = min(len(by_bound), 4 * k)
    while True:
        part = np.sort(by_bound[:m])
        best = _best_docs(part, _exact_at(lists, part), chunk_doc, k)
        if len(best) >= k or m == len(by_bound):
            break
        m = min(len(by_bound), 4 * m)
    need = 0
    if len(best) >= k and best[-1][1] > 0.0:
        need = int(best[-1][1] / (unit * (1.0 + QUANT_SLACK)))
    cand = touched[qsum[touched] >= need]
    return _best_docs(cand, _exact_at(lists, cand), chunk_doc, k)
