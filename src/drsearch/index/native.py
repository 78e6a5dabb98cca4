"""The one door to the optional C kernel (``_kernels``, built from ``_kernels.c`` and its parts).

Every call into the kernel goes through this module: one function per kernel entry, typed,
with the kernel's positional argument tuples built here and nowhere else (the kernel's own
docstrings, in the ``_k_*.h`` parts, say what each argument holds). Whether the kernel can be
used at all is decided here too: it may not be built (no C compiler at install), or be built
from an older ``_kernels.c`` than this code calls (a checkout updated without rebuilding:
:data:`KERNEL_ABI`); then :func:`available` is False and every caller takes the pure-Python
path of :mod:`drsearch.index.reference` (the same results, bit for bit, slower).

The functions below assume the kernel is available (callers check :func:`available` once, when
they are made); each returns what the kernel returns, unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import NotImplementedType
from typing import Any

import numpy as np
import numpy.typing as npt

# The C kernel's interface this code calls (its ABI constant): 2 = rank_maxscore takes block
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
# complete search's ranking, texts, snippet plan and hits in one call), 15 = dense_scores and
# dense_isa (the dense retriever's int8 inner products), 16 = rank_quant (exact ranking
# traversed over 8-bit quantised impacts), 17 = span texts (a text column argument naming
# schema version 4's chunk spans, span_column; SPAN_TEXTS; lz_pack and lz_unpack, the drlz
# codec; lz_join, a text's words joined for it), 18 = search_hits without texts (the ranked
# path's hits in one call, one short list in one pass), 19 = coded posting lists (schema 5: a
# paged list's pieces table followed by its code width, table size and table:
# listcodes.descriptor). A kernel built from an older _kernels.c is not
# used: ranking falls back to numpy (same results) and posting lists are read by blob I/O, and
# native=True says why.
KERNEL_ABI = 19

F64 = npt.NDArray[np.float64]
Array = npt.NDArray[Any]
# One query's ranked (chunk rowid, score) pairs, best first.
Ranked = list[tuple[int, float]]
# The ranking kernels' `paged` argument: (the mapped file, per list None or (df, blob_pieces'
# table of its posting BLOB)).
Paged = tuple[Any, Sequence[tuple[int, bytes] | None]]
# What search_hits returns (see :func:`search_hits`).
SearchHits = list[Any] | tuple[list[Any], list[str]] | None | bool | NotImplementedType


def kernel_problem(module: object) -> str | None:
    """Why a compiled ``_kernels`` module cannot be used by this code (None: it can)."""
    abi = getattr(module, "ABI", 1)
    if abi != KERNEL_ABI:
        return (f"drsearch.index._kernels is stale (interface {abi}, this drsearch calls "
                f"{KERNEL_ABI}): rebuild it (python setup.py build_ext --inplace, or reinstall)")
    return None


NOT_BUILT = "drsearch.index._kernels was not built (no C compiler at install?)"
try:
    from . import _kernels
except ImportError:  # built without a C compiler: the reference code does the same work, slower
    _kernels = None  # type: ignore[assignment]
    _PROBLEM: str | None = NOT_BUILT
else:
    _PROBLEM = kernel_problem(_kernels)
    if _PROBLEM is not None:
        _kernels = None  # type: ignore[assignment]

NATIVE_AVAILABLE = _kernels is not None


def native_kernels() -> Any | None:
    """The compiled ``_kernels`` module this code can call, or None (not built, or stale): for
    tests of the kernel's own interface and probes; everything else calls the functions below."""
    return _kernels


def span_texts() -> bool:
    """Whether the kernel cuts schema version 4's chunk texts from their documents' zlib text
    (built where zlib's header was found): the text readers then take :func:`span_column`."""
    return _kernels is not None and bool(getattr(_kernels, "SPAN_TEXTS", 0))


def span_column(text: int, doc: int, start: int, end: int, zstart: int, doc_root: int, doc_text: int) -> int:
    """The text readers' ``column`` argument for version-4 chunk texts (_k_texts.h): the chunks
    row's ``text``, ``doc``, ``start_byte``, ``end_byte`` and ``zstart`` columns, and
    ``doc_texts``' root page and text column. Raises ValueError for a column past 31 or a root
    page out of range."""
    cols = (text, doc, start, end, zstart, doc_text)
    if not all(0 <= c < 32 for c in cols) or not 0 < doc_root <= 0xFFFFFFFF:
        raise ValueError(f"span column out of range: {cols}, root {doc_root}")
    packed = sum(c << (5 * i) for i, c in enumerate(cols))
    return packed | (1 << 30) | (doc_root << 31)


def lz_pack(data: bytes, starts: Sequence[int]) -> tuple[bytes, list[int]]:
    """``_kernels.lz_pack``: ``data`` in the drlz format with a block at each start, and the
    starts' offsets in it (lzcodec.pack)."""
    got: tuple[bytes, list[int]] = _kernels.lz_pack(data, starts)
    return got


def lz_join(data: bytes, spans: Sequence[tuple[int, int]]) -> tuple[bytes, list[tuple[int, int]]]:
    """``_kernels.lz_join``: a UTF-8 document text joined (its words by single spaces, then the
    other whitespace) and its chunks' spans in the joined words (chunktext.join_reference)."""
    got: tuple[bytes, list[tuple[int, int]]] = _kernels.lz_join(data, spans)
    return got


def lz_unpack(blob: bytes | memoryview, zstart: int = -1, want: int = -1) -> bytes:
    """``_kernels.lz_unpack``: a drlz stream's whole text (its checksum not included: lzcodec.unpack
    checks it), or ``want`` bytes from ``zstart`` (lzcodec.span). ValueError for bytes that are
    not drlz."""
    got: bytes = _kernels.lz_unpack(blob, zstart, want)
    return got


def available() -> bool:
    """Whether the kernel can be called (built, and of this code's :data:`KERNEL_ABI`)."""
    return _kernels is not None


def problem() -> str:
    """Why the kernel cannot be called (where :func:`available` is False)."""
    return _PROBLEM or NOT_BUILT


# -- ranking (_k_rank.h, _k_entry.h) -------------------------------------------------------------

def rank_blocks(chunks: Sequence[Array | None], impacts: Sequence[Array | None], n_rows: int,
                blocked: Array | None, chunk_doc: Array, k: int, margin: float, buf: F64,
                out_chunks: Array, out_scores: F64, budget: float, paged: Paged | None,
                texts: tuple[Any, ...] | None, rescore: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """Every posting of the lists, window by window in ``buf``: (chunks written to
    ``out_chunks``/``out_scores`` (negative: ``budget`` seconds ran out), of them the k best
    documents' own, the k-th document's score), then with ``texts`` (:func:`texts_arg`) the
    texts and snippets made (None: deadline passed, False: a text could not be read), or
    with ``rescore`` (:func:`rescore_arg`) the exact rescoring's (ranked or None where the
    candidates do not settle the top k, made). Raises ValueError for a damaged list."""
    return _kernels.rank_blocks(chunks, impacts, n_rows, blocked, chunk_doc, k, margin, buf,
                                out_chunks, out_scores, budget, paged, texts, rescore)


def rank_maxscore(chunks: Sequence[Array | None], impacts: Sequence[Array | None], bounds: F64,
                  n_rows: int, blocked: Array | None, chunk_doc: Array, k: int, margin: float,
                  buf: F64, out_chunks: Array, out_scores: F64, budget: float,
                  block_max: Sequence[Array | None] | None, block_postings: int, paged: Paged | None,
                  texts: tuple[Any, ...] | None, rescore: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """:func:`rank_blocks` with exact MaxScore pruning over the lists' ``bounds`` and (with
    ``block_postings``) each block's maximum: the same results, bit for bit."""
    return _kernels.rank_maxscore(chunks, impacts, bounds, n_rows, blocked, chunk_doc, k, margin,
                                  buf, out_chunks, out_scores, budget, None, block_max,
                                  block_postings, paged, texts, rescore)


def rank_one(chunks: Array, impacts: F64, n_rows: int, blocked: Array | None, chunk_doc: Array,
             k: int) -> Ranked:
    """A query of one list: each document's best posting into a k-heap, in one pass. Raises
    ValueError for a list not ascending or out of range."""
    return _kernels.rank_one(chunks, impacts, n_rows, blocked, chunk_doc, k)


def rank_quant(lists: Sequence[tuple[Array, Array, F64]], unit: float, n_rows: int,
               blocked: Array | None, chunk_doc: Array, k: int, window: int = 16384) -> Ranked:
    """The k best documents of ``lists`` (phrase order; each (chunks uint32, quants uint8,
    impacts float64) with quants * unit >= impacts: :func:`drsearch.index.terms.quantize`),
    traversed over the quants and rescored exactly: rank_blocks' answer, bit for bit. Raises
    ValueError for inconsistent arguments or a damaged list. ``window``: the longest window
    of rowids (64..16384, a power of two; smaller ones are for tests)."""
    return _kernels.rank_quant(lists, unit, n_rows, blocked, chunk_doc, k, window)


def rescore_arg(spec: Sequence[tuple[Any, ...]], file: Any, chunk_len: Array, k1: float, b: float,
                avgdl: float, k1p1: float, idf: float, chunk_doc: Array) -> tuple[Any, ...]:
    """The ranking kernels' ``rescore`` argument (and :func:`rescore`'s arguments after the
    candidates): every term's spec in phrase order (``(0, df, pieces)`` a list in ``file``'s
    pages, ``(1, chunks, impacts)`` a list as arrays, ``(2, pieces)`` a clamped term's tfs in
    the pages, ``(3, tfs)`` the candidates' tfs), the BM25 parameters and chunk_doc."""
    return (spec, file, chunk_len, k1, b, avgdl, k1p1, idf, chunk_doc)


def rescore(cands: Array, arg: tuple[Any, ...], k: int,
            texts: tuple[Any, ...] | None = None) -> Ranked | tuple[Ranked, Any]:
    """The exact scores of ``cands`` (ascending chunk rowids) by every term of ``arg``
    (:func:`rescore_arg`) and their top k documents; with ``texts``, (ranked, made) as
    :func:`rank_blocks` makes them. Raises ValueError for a damaged list."""
    spec, file, chunk_len, k1, b, avgdl, k1p1, idf, chunk_doc = arg
    got: Ranked | tuple[Ranked, Any] = _kernels.rescore(cands, spec, file, chunk_len, k1, b, avgdl,
                                                         k1p1, idf, chunk_doc, k, texts)
    return got


def paged_pick(file: Any, df: int, pieces: bytes, keys: Array, out: F64) -> None:
    """Each key's impact in a list left in ``file``'s pages into ``out`` (+0.0 where absent)."""
    _kernels.paged_pick(file, df, pieces, keys, out)


# -- a complete search in one call (_k_hits.h) ---------------------------------------------------

def search_context(head: tuple[Any, ...], file: Any, rule: tuple[Any, ...],
                   geometry: tuple[Any, ...], width: int, hit_buffers: tuple[Any, ...],
                   hit_type: type[Any], idf_floor: float, paged_type: type[Any],
                   sparse_type: type[Any]) -> tuple[Any, ...]:
    """:func:`search_hits`' context: ``head`` the scorer's (n_rows, blocked, chunk_doc, buf,
    out_chunks, out_scores), ``file`` the mapped pages, ``rule`` its pruning (block_postings,
    pruning code, prune_all_k, prune_all_rows), ``geometry`` the chunk text column's
    (page_size, usable, root, column), the snippets' ``width``, make_hits' buffers and type,
    IDF_FLOOR and the term classes the kernel reads."""
    return (*head, file, *rule, *geometry, width, hit_buffers, hit_type, idf_floor, paged_type,
            sparse_type)


def search_hits(context: tuple[Any, ...], terms: Sequence[Any], stems: Sequence[tuple[str, float]] | None,
                k: int, budget: float, deadline: float,
                rescore: tuple[tuple[Any, ...], float] | tuple[()] = (), one_list: int = 0) -> SearchHits:
    """A complete search's ranking, texts, snippets and hits in one call (``context``:
    :func:`search_context`; ``terms``: PagedTerm/SparseTerm lists in phrase order; ``stems``
    each term's snippet (stem, weight); ``rescore``: beside clamped terms, (:func:`rescore_arg`,
    margin)). ``stems`` None: the ranked hits without texts ('' for text and snippet; never a
    tuple or False), a query of one list of at most ``one_list`` postings (without
    ``rescore``) ranked in one pass as :func:`rank_one` ranks it. Returns:

    - the hits (a list): done;
    - (hits, texts): done but for the snippets the kernel left to the Python code (None in
      their hit), the chunks' texts to make them from;
    - None: ``budget`` or ``deadline`` ran out;
    - False: reading the texts failed (the caller reads them again, which reports it);
    - NotImplemented: a term of another type, or candidates beside clamped terms that do not
      settle the top k (the caller ranks by the other calls).

    Raises ValueError for a damaged list or buffer."""
    spec, margin = rescore if rescore else (None, -1.0)
    got: SearchHits = _kernels.search_hits(context, terms, stems, k, budget, deadline, spec, margin, one_list)
    return got


def make_hits(hit_type: type[Any], chunks: Sequence[int], scores: Sequence[float], chunk_doc: Array,
              chunk_ordinal: Array, field_offsets: Array, fields: Any, pieces: bytes | None,
              texts: Sequence[str] | None = None, snippets: Sequence[str] | None = None) -> list[Any]:
    """The ranked chunks' ``hit_type`` values (rank, docid, url, title, score, ordinal, text,
    snippet; without ``texts``, empty text and snippet). Raises ValueError for damaged fields."""
    if texts is None:
        return _kernels.make_hits(hit_type, chunks, scores, chunk_doc, chunk_ordinal, field_offsets,
                                  fields, pieces)
    return _kernels.make_hits(hit_type, chunks, scores, chunk_doc, chunk_ordinal, field_offsets,
                              fields, pieces, texts, snippets)


# -- snippets and texts (_k_snippet.h, _k_texts.h) -----------------------------------------------

def snippets(texts: Sequence[str], stems: Sequence[str], weights: Sequence[float], width: int,
             deadline: float) -> list[str | None] | None:
    """Each text's snippet (None: a text the Python code must take); None past ``deadline``."""
    return _kernels.snippets(texts, stems, weights, width, deadline)


def texts_arg(geometry: tuple[Any, ...], stems: Sequence[str], weights: Sequence[float], width: int,
              deadline: float, hits: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """The ranking kernels' ``texts`` argument: a TEXT column's ``geometry`` (the file's pages,
    page size, usable bytes, root, column), the snippets' stems, weights and width, the
    deadline, and make_hits' buffers to read into the cache (or None)."""
    return (*geometry, stems, weights, width, deadline, hits)


def read_blobs(pages: Any, page_size: int, usable: int, root: int, column: int,
               rowids: Sequence[int], outs: Sequence[Any]) -> None:
    """Copy each row's BLOB into ``outs[i]``. Raises ValueError naming the row."""
    _kernels.read_blobs(pages, page_size, usable, root, column, rowids, outs)


def blob_pieces(pages: Any, page_size: int, usable: int, root: int, column: int, rowid: int) -> bytes:
    """Where a row's BLOB lies in the pages (little-endian int64s: its length, then pieces).
    Raises ValueError naming the row."""
    return _kernels.blob_pieces(pages, page_size, usable, root, column, rowid)


def read_texts(pages: Any, page_size: int, usable: int, root: int, column: int,
               rowids: Sequence[int]) -> list[str]:
    """Each row's TEXT. Raises ValueError naming the row, UnicodeDecodeError."""
    return _kernels.read_texts(pages, page_size, usable, root, column, rowids)


def texts_snippets(pages: Any, page_size: int, usable: int, root: int, column: int,
                   rowids: Sequence[int], stems: Sequence[str], weights: Sequence[float], width: int,
                   deadline: float) -> tuple[list[str], list[str | None]] | None:
    """:func:`read_texts` and :func:`snippets` of them in one call; None past ``deadline``."""
    return _kernels.texts_snippets(pages, page_size, usable, root, column, rowids, stems, weights,
                                   width, deadline)


def find_rows(pages: Any, page_size: int, usable: int, root: int, keys: Sequence[str],
              columns: Sequence[int], kinds: str) -> list[tuple[int | float, ...] | None] | None:
    """Each key's row of a WITHOUT ROWID table (None: not there); None instead of the list
    where a key's path holds a cell too long for its page. Raises ValueError naming the key."""
    return _kernels.find_rows(pages, page_size, usable, root, keys, columns, kinds)


# -- the build (_fts5.h, _k_texts.h) -------------------------------------------------------------

def fts5_doclists(pages: Sequence[bytes], first_pgno: int, to_end: bool, chunks: Any, tfs: Any,
                  lengths: Any) -> tuple[list[str], list[int], int]:
    """FTS5 leaf pages decoded into postings (reference: ``fts5index.decode_pages``)."""
    return _kernels.fts5_doclists(pages, first_pgno, to_end, chunks, tfs, lengths)


def word_count(text: str) -> int:
    """``len(text.split())``, without the list."""
    return _kernels.word_count(text)


def word_byte_spans(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """chunktext.byte_spans in C (the UTF-8 byte offsets of each word span). ValueError for a
    span not within the text's words."""
    return _kernels.word_byte_spans(text, spans)


def join_words(text: str, spans: Sequence[tuple[int, int]]) -> list[str]:
    """Each span's words joined by single spaces."""
    return _kernels.join_words(text, spans)


# -- dense vectors (_k_dense.h) -----------------------------------------------------------------

def dense_scores(matrix: Array, query: Array, scales: F64, q_scale: float, hidden: Array | None,
                 out: F64, baseline: bool = False) -> None:
    """Every row's exact score into ``out``: ``matrix`` (rows, dimension) C-contiguous int8,
    ``query`` its dimension's int8, ``scales`` float64 per row, ``hidden`` bool per row (its
    rows score -inf) or None; a row's score is ``(float64(int32 inner product) * scales[i]) *
    q_scale`` (twin: :func:`drsearch.index.reference.dense_scores`). ``baseline``: the loop's
    baseline (SSE2) copy even where the CPU has AVX2. Raises ValueError for inconsistent
    shapes."""
    _kernels.dense_scores(matrix, int(matrix.shape[1]), query, scales, q_scale, hidden, out, baseline)


def dense_isa() -> str:
    """Which copy of the dense loop this CPU runs (``avx2`` or ``baseline``; ``numpy`` without
    the kernel)."""
    return str(_kernels.dense_isa()) if available() else "numpy"


# -- threads (_gil.c) ----------------------------------------------------------------------------

def gil_stats() -> tuple[float, float, int]:
    """This thread's (seconds without the GIL, seconds waiting to take it back, calls)."""
    return _kernels.gil_stats()


def gil_poll_ns(ns: int | None = None) -> int:
    """The longest a thread back from the kernel's GIL-free work polls for the GIL before it
    sleeps in CPython's wait (nanoseconds; default 200,000), and with ``ns`` set it for every
    thread of the process (0: never poll; at most 100 ms, since a poller does not ask the GIL's
    holder to switch). Returns the bound before the call; -1 where there is no polling (no
    kernel, or a CPython whose GIL the kernel cannot read). Why: docs/ENGINE.md, "Threads".
    Raises ValueError for a negative ``ns`` or one over 100 ms."""
    if ns is not None and not 0 <= ns <= 100_000_000:
        raise ValueError(f"gil_poll_ns: {ns} ns is not within 0 and 100,000,000 (100 ms)")
    if not available():
        return -1
    return int(_kernels.gil_spin(-1 if ns is None else ns))


__all__ = ["KERNEL_ABI", "NATIVE_AVAILABLE", "NOT_BUILT", "Paged", "Ranked", "SearchHits", "available",
           "blob_pieces", "dense_isa", "dense_scores", "find_rows", "fts5_doclists", "gil_poll_ns",
           "gil_stats", "join_words", "kernel_problem", "lz_join", "lz_pack", "lz_unpack",
           "make_hits", "native_kernels", "paged_pick", "problem", "rank_blocks",
           "rank_maxscore", "rank_one", "read_blobs", "read_texts", "rescore", "rescore_arg",
           "search_context", "search_hits", "snippets", "span_column", "span_texts", "texts_arg",
           "texts_snippets", "word_byte_spans", "word_count"]
