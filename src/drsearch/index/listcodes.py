"""Posting lists whose impacts are codes into a per-term table (schema version 5).

A term's impacts are ``idf * g(tf, chunk length)``; chunks are mostly ~800 words, so a term has
far fewer *distinct* impacts than postings. A version-5 list stores its sorted distinct float64
impacts once (its *table*) and per posting a code, the index of its impact in the table: one
byte when the term has at most 256 distinct impacts, two when at most 65,536, else the raw
float64 (width 8: version 4's layout, no table). Each term takes the smallest of the layouts
(a term with df 1 or 2 stays raw where a table would not save). A posting's impact is read as
``table[code]``: the very float64 the file stored before, so every score is still FTS5's
``bm25()`` bit for bit. The table is ascending: code order is impact order.

A list's BLOB, version 5: ``n_table`` float64 (its table), ``df`` codes of ``width`` bytes
(little-endian) padded with zeros to a multiple of 4 bytes, ``df`` uint32 chunk rowids, then its
block maxima (:func:`drsearch.index.schema.block_count`). Raw (width 8, no table): ``df``
float64 impacts, rowids, block maxima -- version 4's BLOB byte for byte. The ``terms`` row says
``width`` and ``n_table``; every length is checked against them (:func:`check_layout`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..contract.errors import CorruptIndexError
from .schema import block_count

F64 = npt.NDArray[np.float64]
RAW_WIDTH = 8
# The most distinct impacts a list of 1- and 2-byte codes may hold: what the format allows
# (the readers check it) and what the writer uses, unless a test passes smaller limits to hit
# every layout with small lists.
CODE_LIMITS = (256, 65536)
_CODE_DTYPES: dict[int, str] = {1: "<u1", 2: "<u2"}


def rowids_at(df: int, width: int, n_table: int) -> int:
    """Where a list's rowids start in its BLOB: after its table and its codes (padded to 4)."""
    return 8 * n_table + (width * df + 3) // 4 * 4


def list_bytes(df: int, width: int, n_table: int, block_postings: int | None) -> int:
    """A sparse list's BLOB length: table, codes, rowids and (``block_postings``: schema 2 and
    later) its block maxima."""
    blocks = block_count(df, block_postings) if block_postings else 0
    return rowids_at(df, width, n_table) + 4 * df + 8 * blocks


def layout_problem(df: int, width: int, n_table: int) -> str | None:
    """Why (df, width, n_table) is not a list layout the format allows (None: it is)."""
    if width == RAW_WIDTH:
        return None if n_table == 0 else f"a raw list with a table of {n_table}"
    if width not in _CODE_DTYPES:
        return f"code width {width}"
    cap = CODE_LIMITS[width - 1]
    if not 1 <= n_table <= cap or n_table > df:
        return f"a table of {n_table} impacts for {width}-byte codes and df {df}"
    return None


def check_layout(term: str, df: int, width: int, n_table: int) -> None:
    """Raise CorruptIndexError naming ``term`` when its row's layout is not one the format
    allows (a damaged ``terms`` row)."""
    problem = layout_problem(df, width, n_table)
    if problem is not None:
        raise CorruptIndexError(f"the terms row of {term!r} is damaged ({problem}); check the index "
                                "with `drsearch validate --deep`")


def choose_width(df: int, n_distinct: int, limits: tuple[int, int] = CODE_LIMITS) -> int:
    """The width of the smallest layout for a list of ``df`` postings with ``n_distinct``
    distinct impacts: 1 or 2 (coded) when that is smaller than raw, else 8."""
    for width, cap in zip((1, 2), limits, strict=True):
        if n_distinct <= cap:
            return width if rowids_at(df, width, n_distinct) < RAW_WIDTH * df else RAW_WIDTH
    return RAW_WIDTH


def encode(impacts: F64, limits: tuple[int, int] = CODE_LIMITS) -> tuple[int, F64, npt.NDArray[Any]]:
    """A list's impacts as (width, table, codes): its sorted distinct impacts and each
    posting's index among them, or (8, empty, the impacts) where raw is smallest."""
    table, codes = np.unique(impacts, return_inverse=True)
    width = choose_width(len(impacts), len(table), limits)
    if width == RAW_WIDTH:
        return width, np.empty(0, np.float64), np.asarray(impacts, dtype="<f8")
    return width, table.astype("<f8"), codes.astype(_CODE_DTYPES[width])


def list_blob(impacts: F64, rows: npt.NDArray[Any], block_postings: int | None,
              limits: tuple[int, int] = CODE_LIMITS) -> tuple[bytes, int, int]:
    """A sparse list's version-5 BLOB (impacts and ascending uint32 rowids; with
    ``block_postings``, its block maxima) and its (width, n_table)."""
    width, table, codes = encode(impacts, limits)
    return _blob(width, table, codes, np.asarray(rows, dtype="<u4"), impacts, block_postings), \
        width, len(table)


def _blob(width: int, table: F64, codes: npt.NDArray[Any], rows: npt.NDArray[np.uint32],
          impacts: F64, block_postings: int | None) -> bytes:
    """The BLOB of a list given its layout: table, codes padded to 4 bytes, rowids, block maxima."""
    parts = [table.tobytes(), codes.tobytes(), b"\0" * (-codes.nbytes % 4), rows.tobytes()]
    if block_postings and block_count(len(rows), block_postings):
        parts.append(np.maximum.reduceat(impacts, np.arange(0, len(rows), block_postings))
                     .astype("<f8").tobytes())
    return b"".join(parts)


def encode_terms(impacts: F64, dfs: npt.NDArray[np.int64], limits: tuple[int, int] = CODE_LIMITS
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
                            npt.NDArray[np.int64], F64]:
    """:func:`encode` of many lists at once (the build's window): ``impacts`` the lists end to
    end, ``dfs`` their lengths (each >= 1). Returns per list its width and table size, and for
    all of them each posting's code (int64: 0 for a raw list), each list's first entry in the
    tables (int64) and the tables end to end (raw lists have none)."""
    n = len(dfs)
    ends = np.cumsum(dfs)
    starts = ends - dfs
    seg = np.repeat(np.arange(n, dtype=np.int64), dfs)
    order = np.lexsort((impacts, seg))  # by list, then impact (seg is ascending already)
    srt = impacts[order]
    new = np.ones(len(srt), dtype=np.bool_)
    new[1:] = (seg[1:] != seg[:-1]) | (srt[1:] != srt[:-1])
    rank = np.cumsum(new) - 1  # each sorted posting's entry among all lists' distinct impacts
    n_distinct = np.add.reduceat(new.astype(np.int64), starts) if n else np.zeros(0, np.int64)
    first = rank[starts] if n else np.zeros(0, np.int64)
    codes = np.empty(len(srt), dtype=np.int64)
    codes[order] = rank - np.repeat(first, dfs)
    widths = np.full(n, RAW_WIDTH, dtype=np.int64)
    for width, cap in zip((2, 1), limits[::-1], strict=True):  # the smaller width wins
        fits = (n_distinct <= cap) & (8 * n_distinct + (width * dfs + 3) // 4 * 4 < RAW_WIDTH * dfs)
        widths[fits] = width
    raw = widths == RAW_WIDTH
    n_table = np.where(raw, 0, n_distinct)
    codes[np.repeat(raw, dfs)] = 0
    tables = srt[new]
    keep = np.repeat(~raw, n_distinct)  # raw lists' distinct impacts are no table
    table_start = np.cumsum(n_table) - n_table
    return widths, n_table, codes, table_start, tables[keep]


def write_list(out: Any, width: int, table: F64, codes: npt.NDArray[np.int64], impacts: F64,
               rows: npt.NDArray[np.uint32], block_postings: int) -> None:
    """Write one list of :func:`encode_terms` (its slice of each output) to the file ``out``."""
    if width == RAW_WIDTH:
        out.write(_blob(width, table, impacts.astype("<f8", copy=False), rows, impacts, block_postings))
    else:
        out.write(_blob(width, table, codes.astype(_CODE_DTYPES[width]), rows, impacts, block_postings))


def decode(buf: Any, df: int, width: int, n_table: int, nbytes: int, out: F64 | None = None
           ) -> tuple[npt.NDArray[np.uint32], F64, F64]:
    """A list's BLOB bytes (``nbytes`` of ``buf``; its layout checked by the caller) as
    (rowids, impacts, block maxima): views, but for a coded list's impacts (``table[codes]``,
    into ``out`` (``df`` float64s) when given, else a new array). Raises ValueError for a code
    beyond the table."""
    at = rowids_at(df, width, n_table)
    rows = np.frombuffer(buf, "<u4", df, at)
    block_max = np.frombuffer(buf, "<f8", (nbytes - at - 4 * df) // 8, at + 4 * df)
    if width == RAW_WIDTH:
        return rows, np.frombuffer(buf, "<f8", df), block_max
    table = np.frombuffer(buf, "<f8", n_table)
    codes = np.frombuffer(buf, _CODE_DTYPES[width], df, 8 * n_table)
    if df and int(codes.max()) >= n_table:
        raise ValueError(f"a posting list holds an impact code beyond its table of {n_table}")
    return rows, np.take(table, codes, out=out), block_max


def table_problem(buf: Any, df: int, width: int, n_table: int) -> str | None:
    """What is wrong with a coded list's table and codes (None: nothing): a table that is not
    strictly ascending, a code beyond it, or padding that is not zero (validate --deep)."""
    if width == RAW_WIDTH:
        return None
    table = np.frombuffer(buf, "<f8", n_table)
    if n_table > 1 and not bool(np.all(table[1:] > table[:-1])):
        return "its table of impacts is not strictly ascending"
    codes = np.frombuffer(buf, _CODE_DTYPES[width], df, 8 * n_table)
    if df and int(codes.max()) >= n_table:
        return f"a code is beyond its table of {n_table} impacts"
    pad = rowids_at(df, width, n_table) - 8 * n_table - width * df
    if any(np.frombuffer(buf, np.uint8, pad, 8 * n_table + width * df)):
        return "the padding after its codes is not zero"
    return None


def descriptor(pieces: bytes, width: int, table: bytes) -> bytes:
    """A paged list's descriptor as the kernel takes it (``pieces`` of rank_blocks' paged
    lists): ``blob_pieces``' table of its BLOB, then for a coded list its width, its table
    size and its table (int64, int64, float64s), the table copied once out of the BLOB's head."""
    if width == RAW_WIDTH:
        return pieces
    return pieces + np.array([width, len(table) // 8], dtype="<i8").tobytes() + table


def gather(file: Any, pieces: bytes, start: int, n: int) -> bytes:
    """``n`` bytes from byte ``start`` of a BLOB left in ``file``'s pages (``blob_pieces``'
    table ``pieces``). Raises ValueError when they are not all there."""
    head = np.frombuffer(pieces, "<i8", 3)
    length, first, per = int(head[0]), int(head[1]), int(head[2])
    if start < 0 or n < 0 or start + n > length or per < 1:
        raise ValueError(f"bytes {start}..{start + n} of a BLOB of {length}")
    out = bytearray()
    x = start
    while len(out) < n:
        i = 0 if x < first else 1 + (x - first) // per
        piece_start = 0 if i == 0 else first + (i - 1) * per
        piece_end = first if i == 0 else min(piece_start + per, length)
        off = int.from_bytes(pieces[24 + 8 * i:32 + 8 * i], "little", signed=True)
        take = min(piece_end - x, n - len(out))
        got = bytes(file[off + x - piece_start:off + x - piece_start + take])
        if len(got) != take:
            raise ValueError("a piece of the BLOB lies outside the file")
        out += got
        x += take
    return bytes(out)


__all__ = ["CODE_LIMITS", "RAW_WIDTH", "check_layout", "choose_width", "decode", "descriptor",
           "encode", "encode_terms", "gather", "layout_problem", "list_blob", "list_bytes",
           "rowids_at", "table_problem", "write_list"]
