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

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from ..contract.errors import BuildError

STRUCTURE_ROWID = 10  # FTS5_STRUCTURE_ROWID: the record listing every level's segments
_STRUCTURE_V2 = b"\xff\x00\x00\x01"  # after the cookie: segments carry origin/tombstone fields
_PAGE_BITS = 31  # FTS5_DATA_PAGE_B
_SEGID_SHIFT = 37  # FTS5_DATA_PAGE_B + FTS5_DATA_HEIGHT_B + FTS5_DATA_DLI_B
WINDOW_BYTES = 2 << 20  # leaf bytes decoded per call: bounds the build's memory, not its output
MAX_KEY = 65536  # _fts5.h's FTS5_MAX_KEY


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


def _starts_term(page: bytes) -> bool:
    """Whether a term starts on the leaf (its page index is not empty)."""
    return len(page) >= 4 and ((page[2] << 8) | page[3]) < len(page)


def windows(conn: apsw.Connection, table: str, lengths: npt.NDArray[np.int64],
            window_bytes: int = WINDOW_BYTES, native: Any = None) -> Iterator[Window]:
    """Every term's doclist in key order, a window of leaf pages at a time (about
    ``window_bytes`` each; a window ends on a page where a term starts, which the next window
    starts from). Adds each posting's term frequency to ``lengths[rowid]`` (int64, one entry
    per rowid and entry 0), which the caller compares with the chunks' lengths. ``native``:
    the kernel module (None: the Python decoder). Raises BuildError when the index is not one
    merged segment, or not what FTS5 writes."""
    row = conn.execute(f'SELECT block FROM "{table}_data" WHERE id = ?', (STRUCTURE_ROWID,)).fetchone()
    found = segments(row[0]) if row is not None else []
    if not found:
        return
    if len(found) != 1:
        raise BuildError(f"FTS5's index holds {len(found)} segments, not one (it was not optimized)")
    seg = found[0]
    decode = decode_pages if native is None else native.fts5_doclists
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
