"""The postings of FTS5's own index, read out of its shadow tables for the build.

A build inserts each chunk into an FTS5 table once (FTS5 tokenizes it), merges the index
into one segment (``optimize``), then derives the fast scorer's posting lists from that
segment's leaf pages: every term's rowids and term frequencies, in FTS5's key order (the
terms' UTF-8 bytes), and every chunk's length from ``%_docsize``. So the postings hold
exactly the terms FTS5 indexed, and the text is tokenized once, not twice.

The leaves are decoded by the C kernel (``_kernels.fts5_doclists``, see ``_fts5.h`` for the
format) a window of pages at a time; :func:`decode_pages` is the same decoder in Python
(used without the kernel; the tests hold the two to the same results and errors). Every
varint, offset, rowid and key read is checked: an index that is not what FTS5 writes is a
:class:`~drsearch.contract.errors.BuildError`, never a silently wrong posting.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import apsw
import numpy as np
import numpy.typing as npt

from ..contract.errors import BuildError
from . import native as kernel
from .reference import MAX_KEY, decode_pages, varint

STRUCTURE_ROWID = 10  # FTS5_STRUCTURE_ROWID: the record listing every level's segments
_STRUCTURE_V2 = b"\xff\x00\x00\x01"  # after the cookie: segments carry origin/tombstone fields
_PAGE_BITS = 31  # FTS5_DATA_PAGE_B
_SEGID_SHIFT = 37  # FTS5_DATA_PAGE_B + FTS5_DATA_HEIGHT_B + FTS5_DATA_DLI_B
WINDOW_BYTES = 2 << 20  # leaf bytes decoded per call: bounds the build's memory, not its output


@dataclass(frozen=True, slots=True)
class Segment:
    segid: int
    first: int  # its first and last leaf page numbers
    last: int


@dataclass(frozen=True, slots=True)
class Window:
    """The doclists of some consecutive terms: ``terms`` in key order, ``dfs`` rowids per
    term, ``chunks``/``tfs`` every posting (term after term, rowid ascending)."""

    terms: list[str]
    dfs: npt.NDArray[np.int64]
    chunks: npt.NDArray[np.uint32]
    tfs: npt.NDArray[np.uint32]


def segment_rowid(segid: int, pgno: int) -> int:
    """The ``%_data`` rowid of leaf page ``pgno`` of segment ``segid`` (FTS5_SEGMENT_ROWID)."""
    return (segid << _SEGID_SHIFT) + pgno


def segments(structure: bytes) -> list[Segment]:
    """The segments the structure record lists, level after level. Raises BuildError when
    the record does not parse."""
    def read(at: int) -> tuple[int, int]:
        v, n = varint(structure, at, len(structure))
        if not n:
            raise BuildError("FTS5's structure record is truncated")
        return v, at + n

    at = 4  # the cookie
    v2 = structure[4:8] == _STRUCTURE_V2
    at += 4 if v2 else 0
    n_levels, at = read(at)
    n_segments, at = read(at)
    _, at = read(at)  # the write counter
    if v2:
        _, at = read(at)  # the origin counter
    out: list[Segment] = []
    for _ in range(n_levels):
        _, at = read(at)  # segments being merged
        n_level, at = read(at)
        for _ in range(n_level):
            segid, at = read(at)
            first, at = read(at)
            last, at = read(at)
            if v2:
                for _ in range(5):  # origins, tombstone pages and entries, entries
                    _, at = read(at)
            out.append(Segment(segid, first, last))
    if len(out) != n_segments:
        raise BuildError(f"FTS5's structure record lists {len(out)} segments but says {n_segments}")
    return out


def chunk_lengths(conn: apsw.Connection, table: str, n_rows: int) -> npt.NDArray[np.int32]:
    """Every chunk's length in tokens from ``%_docsize`` (index 0 unused). Raises BuildError
    unless it holds exactly the rowids 1..n_rows, one column each."""
    lengths = np.zeros(n_rows + 1, dtype=np.int32)
    expected = 1
    for rowid, size in conn.execute(f'SELECT id, sz FROM "{table}_docsize" ORDER BY id'):
        if rowid != expected or rowid > n_rows or not isinstance(size, bytes):
            raise BuildError(f"FTS5's document sizes hold rowid {rowid} where {expected} of 1..{n_rows} "
                             "was due")
        v, n = varint(size, 0, len(size))
        if not n or n != len(size) or v > 2**31 - 1:
            raise BuildError(f"FTS5's document size of rowid {rowid} is not one column's count")
        lengths[rowid] = v
        expected += 1
    if expected != n_rows + 1:
        raise BuildError(f"FTS5's document sizes stop at rowid {expected - 1} of {n_rows}")
    return lengths


def _starts_term(page: bytes) -> bool:
    """Whether a term starts on the leaf (its page index is not empty)."""
    return len(page) >= 4 and ((page[2] << 8) | page[3]) < len(page)


def windows(conn: apsw.Connection, table: str, lengths: npt.NDArray[np.int64],
            window_bytes: int = WINDOW_BYTES, native: bool = False) -> Iterator[Window]:
    """Every term's doclist in key order, a window of leaf pages at a time (about
    ``window_bytes`` each; a window ends on a page where a term starts, which the next window
    starts from). Adds each posting's term frequency to ``lengths[rowid]`` (int64, one entry
    per rowid and entry 0), which the caller compares with the chunks' lengths. ``native``:
    decode in C (``native.fts5_doclists``; False: the Python decoder). Raises BuildError
    when the index is not one merged segment, or not what FTS5 writes."""
    row = conn.execute(f'SELECT block FROM "{table}_data" WHERE id = ?', (STRUCTURE_ROWID,)).fetchone()
    found = segments(row[0]) if row is not None else []
    if not found:
        return
    if len(found) != 1:
        raise BuildError(f"FTS5's index holds {len(found)} segments, not one (it was not optimized)")
    seg = found[0]
    decode = kernel.fts5_doclists if native else decode_pages
    previous: str | None = None

    def window(pages: list[bytes], first: int, to_end: bool) -> Window:
        nonlocal previous
        cap = sum(map(len, pages)) // 3 + 1  # a posting takes 3 bytes at least
        chunks = np.empty(cap, dtype=np.uint32)
        tfs = np.empty(cap, dtype=np.uint32)
        try:
            terms, dfs, n = decode(pages, first, to_end, chunks, tfs, lengths)
        except ValueError as e:
            raise BuildError(f"FTS5's index is not what FTS5 writes: {e}") from None
        for term in terms:  # key (byte) order is code point order, unless a cut token clashes
            if previous is not None and not previous < term:
                raise BuildError(f"FTS5's index holds the term {term[:40]!r} twice or out of order "
                                 "once decoded (a token cut mid-character at 32,768 bytes?)")
            previous = term
        return Window(terms, np.asarray(dfs, dtype=np.int64), chunks[:n], tfs[:n])

    pages: list[bytes] = []
    size = 0
    first = expected = seg.first
    for rowid, block in conn.execute(
            f'SELECT id, block FROM "{table}_data" WHERE id BETWEEN ? AND ? ORDER BY id',
            (segment_rowid(seg.segid, seg.first), segment_rowid(seg.segid, seg.last))):
        if rowid != segment_rowid(seg.segid, expected) or not isinstance(block, bytes):
            raise BuildError(f"FTS5's index lacks leaf page {expected} of segment {seg.segid}")
        if size >= window_bytes and len(pages) >= 1 and _starts_term(block):
            pages.append(block)
            yield window(pages, first, False)
            pages, size, first = [], 0, expected
        pages.append(block)
        size += len(block)
        expected += 1
    if expected != seg.last + 1:
        raise BuildError(f"FTS5's index lacks leaf page {expected} of segment {seg.segid}")
    yield window(pages, first, True)


__all__ = ["MAX_KEY", "STRUCTURE_ROWID", "WINDOW_BYTES", "Segment", "Window", "chunk_lengths",
           "decode_pages", "segment_rowid", "segments", "varint", "windows"]
