"""Schema version 5's coded posting lists (drsearch.index.listcodes): a list's impacts as 1- or
2-byte codes into a table of its distinct impacts, or raw float64s, whichever is smallest.

FTS5's bm25() is the oracle: a Cranfield index written with small code limits (so that its
lists take every layout: 1-byte and 2-byte codes and raw) ranks every query as FTS5 does at
k = 1, 10 and 100 on every path; the kernel ranks coded lists at the format's boundaries (256
and 257, 65,536 and 65,537 distinct impacts) as the numpy reference does; a version-4 file
(every list raw, no width or table size) opens and answers identically; and damaged rows,
tables and codes are named errors, found by ``posting_problems`` (validate --deep) too.
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from drsearch.contract import CorruptIndexError, IncompatibleIndexError
from drsearch.index import BuildSettings, Engine, EngineOptions, build, listcodes, posting_problems
from drsearch.index.native import NATIVE_AVAILABLE, native_kernels
from drsearch.index.scoring import PagedTerm, Scorer, SparseTerm
from drsearch.index.version4 import write_version4

from ..helpers import best_chunk_per_doc, cranfield_docs, cranfield_queries, fts5_oracle

QUERIES = cranfield_queries()
build_mod = importlib.import_module("drsearch.index.build")  # (the package's `build` is the function)
NEEDS_C = pytest.mark.skipif(not NATIVE_AVAILABLE, reason="drsearch.index._kernels not built")
# (pruning, native): the C kernel choosing per query, always pruning, never; numpy
PATHS = [("auto", True), ("always", True), ("never", True), ("auto", False)] if NATIVE_AVAILABLE \
    else [("auto", False)]
MODES = [pytest.param(m, marks=NEEDS_C) if m[1] else m for m in PATHS]
PAGE_EVERY_LIST = EngineOptions(paged_list_bytes=0)  # every list the kernel can take, in the pages
DEFAULT = EngineOptions()
SMALL_LIMITS = (4, 24)  # 1-byte codes for up to 4 distinct impacts, 2-byte up to 24, then raw


@pytest.fixture(scope="module")
def cran_coded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Cranfield (60/45-word chunks) written with SMALL_LIMITS: lists of every layout."""
    path = tmp_path_factory.mktemp("coded") / "cran.sqlite3"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(build_mod, "_CODE_LIMITS", SMALL_LIMITS)
        build(cranfield_docs(), path, BuildSettings(chunk_words=60, chunk_stride=45, threads=1))
    yield path


def widths(path: Path) -> Counter[int]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return Counter(dict(conn.execute("SELECT width, count(*) FROM terms WHERE dense = 0 GROUP BY width")))
    finally:
        conn.close()


def test_choose_width_takes_the_smallest_layout_at_every_boundary() -> None:
    big = 100_000
    assert [listcodes.choose_width(big, n) for n in (1, 256, 257, 65_536, 65_537)] == [1, 1, 2, 2, 8]
    assert listcodes.choose_width(1, 1) == 8  # a table of one costs more than the impact
    assert (listcodes.choose_width(2, 1), listcodes.choose_width(2, 2)) == (1, 8)
    assert listcodes.choose_width(3, 2) == 1 and listcodes.choose_width(1000, 257, (256, 65_536)) == 2 and listcodes.choose_width(300, 257) == 8
    for df, n in [(1, 1), (2, 1), (2, 2), (3, 3), (40, 40), (5000, 700), (big, 65_537)]:
        w = listcodes.choose_width(df, n)
        assert (listcodes.rowids_at(df, w, n if w != 8 else 0)) <= 8 * df


def test_encode_terms_is_encode_list_by_list() -> None:
    rng = np.random.default_rng(3)
    dfs = np.array([1, 2, 2, 5, 40, 300, 1000, 3], dtype=np.int64)
    lists = [rng.choice(rng.random(int(rng.integers(1, 400))), size=d) for d in dfs.tolist()]
    lists[2] = np.array([0.5, 0.5])
    got_w, got_n, codes, table_at, tables = listcodes.encode_terms(np.concatenate(lists), dfs, (8, 256))
    at = 0
    for i, imps in enumerate(lists):
        w, table, code = listcodes.encode(imps, (8, 256))
        assert (int(got_w[i]), int(got_n[i])) == (w, len(table))
        if w != 8:
            ta = int(table_at[i])
            assert np.array_equal(tables[ta:ta + len(table)], table)
            assert np.array_equal(codes[at:at + len(imps)], code)
            assert np.array_equal(table[code], imps)  # the very float64s
        at += len(imps)


def test_every_layout_ranks_as_fts5_bm25(cran_coded: Path) -> None:
    assert set(widths(cran_coded)) == {1, 2, 8}
    assert posting_problems(cran_coded) == []
    for (pruning, native), options in [(m, o) for m in PATHS for o in (DEFAULT, PAGE_EVERY_LIST)]:
        with Engine.open(cran_coded, native=native, pruning=pruning, options=options) as e:  # type: ignore[arg-type]
            bad = []
            for i, q in enumerate(QUERIES):  # every k on the default routes, one on the others
                for k in (1, 10, 100) if options is DEFAULT else ((1, 10, 100)[i % 3],):
                    if e.rank(q, k) != best_chunk_per_doc(e, fts5_oracle(e, q), k):
                        bad.append((q, k))
            assert not bad, (pruning, native, options, len(bad), bad[:2])


@pytest.mark.parametrize("mode", MODES)
def test_a_version_4_file_answers_as_version_5(cran_coded: Path, tmp_path: Path, mode: tuple[str, bool]) -> None:
    v4 = write_version4(cran_coded, tmp_path / "v4.sqlite3")
    assert v4.stat().st_size > cran_coded.stat().st_size
    pruning, native = mode
    with Engine.open(cran_coded, native=native, pruning=pruning) as e5, \
            Engine.open(v4, native=native, pruning=pruning) as e4:  # type: ignore[arg-type]
        assert (e4.stats()["schema_version"], e5.stats()["schema_version"]) == (4, 5)
        for i, q in enumerate([*QUERIES, "the of a", "of"]):
            k = (1, 10, 100)[i % 3]
            assert e4.rank(q, k) == e5.rank(q, k), q
        assert e4.search(QUERIES[0], 10) == e5.search(QUERIES[0], 10)
    assert posting_problems(v4) == []



def test_only_a_version_5_file_is_written_as_version_4(cran_coded: Path, tmp_path: Path) -> None:
    """A version-4 file given to ``write_version4`` is refused in one line, before its
    destination is written."""
    v4 = write_version4(cran_coded, tmp_path / "v4.sqlite3")
    again = tmp_path / "again.sqlite3"
    with pytest.raises(IncompatibleIndexError, match="schema version 4, not 5"):
        write_version4(v4, again)
    assert not again.exists()

# -- the kernel at the format's boundaries ------------------------------------------------------

def paged(lists: list[tuple[SparseTerm, int]]) -> list[PagedTerm]:
    """Each (term, width) as a PagedTerm whose BLOB (schema 5's layout of ``width``) lies in
    one buffer in pieces of 4,092 bytes (codes and rowids straddle them)."""
    file = bytearray(b"x" * 5)
    made = []
    for t, width in lists:
        if width == listcodes.RAW_WIDTH:
            blob, code = t.impacts.tobytes() + t.chunks.tobytes() + t.block_max.tobytes(), b""
        else:
            table, codes = np.unique(t.impacts, return_inverse=True)
            codes = codes.astype("<u1" if width == 1 else "<u2")
            blob = table.tobytes() + codes.tobytes() + b"\0" * (-codes.nbytes % 4) + t.chunks.tobytes() \
                + t.block_max.tobytes()
            code = listcodes.descriptor(b"", width, table.tobytes())
        first, per = 1000, 4092
        offs = []
        for at in [0, *range(first, len(blob), per)]:
            offs.append(len(file) + 3)
            file += b"pad" + blob[at:at + (first if at == 0 else per)]
        made.append((t, np.array([len(blob), first, per, *offs], dtype=np.int64).tobytes() + code))
    view = memoryview(bytes(file))
    return [PagedTerm(t.term, t.df, t.max_impact, view, pieces, lambda t=t: t) for t, pieces in made]


@NEEDS_C
@pytest.mark.parametrize("distinct", [256, 257, 65_536, 65_537])
def test_the_kernel_reads_codes_at_the_boundaries_as_numpy_reads_impacts(distinct: int) -> None:
    rng = np.random.default_rng(distinct)
    n_rows, df = 300_000, 150_000  # (65,536 distinct impacts: 2-byte codes pay from df 87,382)
    chunk_doc = np.concatenate([[0], np.arange(n_rows) // 3 + 1]).astype(np.int32)
    chunk_len = np.concatenate([[0], rng.integers(1, 900, n_rows)]).astype(np.int32)
    values = np.sort(rng.random(distinct) * 4.0 + 0.01)
    rows = np.sort(rng.choice(np.arange(1, n_rows + 1), size=df, replace=False)).astype(np.uint32)
    imps = values[np.concatenate([np.arange(distinct), rng.integers(0, distinct, df - distinct)])]
    rng.shuffle(imps)
    w = listcodes.choose_width(len(imps), len(np.unique(imps)))
    assert w == (1 if distinct <= 256 else 2 if distinct <= 65_536 else 8)
    bmax = np.maximum.reduceat(imps, np.arange(0, len(imps), 64))
    other_rows = np.sort(rng.choice(np.arange(1, n_rows + 1), size=9000, replace=False)).astype(np.uint32)
    other = rng.choice([0.5, 1.0, 2.5], size=9000)
    terms = [SparseTerm("a", len(rows), rows, imps, float(imps.max()), bmax),
             SparseTerm("b", len(other_rows), other_rows, other, 2.5,
                        np.maximum.reduceat(other, np.arange(0, 9000, 64)))]
    on_pages: list[Any] = paged([(terms[0], w), (terms[1], 1)])
    want = {k: Scorer(chunk_doc, chunk_len, native=False, block_postings=64).rank(
        terms, k, None, Scorer(chunk_doc, chunk_len, native=False).scratch(), 1e18) for k in (1, 100)}
    for pruning in ("always", "never"):
        scorer = Scorer(chunk_doc, chunk_len, native=True, pruning=pruning, block_postings=64)
        for k in (1, 100):
            assert scorer.rank(on_pages, k, None, scorer.scratch(), 1e18) == want[k], (pruning, k)
            assert scorer.rank(on_pages[:1], k, None, scorer.scratch(), 1e18) == \
                Scorer(chunk_doc, chunk_len, native=False, block_postings=64).rank(
                    terms[:1], k, None, scorer.scratch(), 1e18)


# -- damage -------------------------------------------------------------------------------------

def _coded_term(path: Path, width: int) -> tuple[str, int, int, int]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row = conn.execute("SELECT term, id, df, n_table FROM terms WHERE dense = 0 AND width = ? AND df > 4 "
                           "AND term GLOB '[a-z]*' ORDER BY df DESC, term LIMIT 1", (width,)).fetchone()
    finally:
        conn.close()
    assert row is not None
    return row


def _damaged(src: Path, dst: Path, sql: str, args: tuple[Any, ...]) -> Path:
    dst.write_bytes(src.read_bytes())
    conn = apsw.Connection(str(dst))
    conn.execute(sql, args)
    conn.close()
    return dst


@pytest.mark.parametrize("column,value", [("width", 3), ("width", 4), ("n_table", 0), ("n_table", 300),
                                          ("n_table", 10**9)])
def test_a_damaged_terms_row_is_a_named_error(cran_coded: Path, tmp_path: Path, column: str,
                                              value: int) -> None:
    term, _, _, _ = _coded_term(cran_coded, 1)
    bad = _damaged(cran_coded, tmp_path / "bad.sqlite3", f"UPDATE terms SET {column} = ? WHERE term = ?",
                   (value, term))
    for native in ([True, False] if NATIVE_AVAILABLE else [False]):
        with Engine.open(bad, native=native) as e:
            with pytest.raises(CorruptIndexError, match=repr(term)):
                e.search(term, 10)
            e._term_rows = None  # the term rows by SQL: the same check
            with pytest.raises(CorruptIndexError, match=repr(term)):
                e.search(f"{term} flow", 10)
            assert e.search("flow", 10).hits
    (problem,) = posting_problems(bad)
    assert repr(term) in problem and "terms row is damaged" in problem


@pytest.mark.parametrize("width", [1, 2])
def test_a_code_beyond_its_table_is_a_named_error(cran_coded: Path, tmp_path: Path, width: int) -> None:
    """Lists ranked in the pages by C and lists decoded in Python alike, alone or not."""
    term, tid, df, n_table = _coded_term(cran_coded, width)
    conn = apsw.Connection(str(cran_coded), flags=apsw.SQLITE_OPEN_READONLY)
    (data,) = conn.execute("SELECT data FROM postings WHERE id = ?", (tid,)).fetchone()
    conn.close()
    damaged = bytearray(data)
    damaged[8 * n_table + width * (df // 2)] = 0xFF  # code n_table or more (<= 24 here)
    bad = _damaged(cran_coded, tmp_path / "bad.sqlite3", "UPDATE postings SET data = ? WHERE id = ?",
                   (bytes(damaged), tid))
    for (pruning, native), options in [(m, o) for m in PATHS for o in (DEFAULT, PAGE_EVERY_LIST)]:
        with Engine.open(bad, native=native, pruning=pruning, options=options) as e:  # type: ignore[arg-type]
            for q in (term, f"{term} flow"):
                with pytest.raises(CorruptIndexError, match="code beyond its table"):
                    e.rank(q, 100)
                for with_text in (False, True):  # (a search's one kernel call, one list in one pass)
                    with pytest.raises(CorruptIndexError, match="code beyond its table"):
                        e.search(q, 10, with_text=with_text)
    (problem,) = posting_problems(bad)
    assert repr(term) in problem and "beyond its table" in problem


def test_a_table_out_of_order_and_a_wrong_length_are_found_by_the_deep_check(cran_coded: Path,
                                                                             tmp_path: Path) -> None:
    term, tid, _, n_table = _coded_term(cran_coded, 2)
    conn = apsw.Connection(str(cran_coded), flags=apsw.SQLITE_OPEN_READONLY)
    (data,) = conn.execute("SELECT data FROM postings WHERE id = ?", (tid,)).fetchone()
    conn.close()
    swapped = bytearray(data)
    swapped[0:16] = data[8:16] + data[0:8]
    bad = _damaged(cran_coded, tmp_path / "order.sqlite3", "UPDATE postings SET data = ? WHERE id = ?",
                   (bytes(swapped), tid))
    (problem,) = posting_problems(bad)
    assert repr(term) in problem and "not strictly ascending" in problem
    short = _damaged(cran_coded, tmp_path / "short.sqlite3", "UPDATE postings SET data = ? WHERE id = ?",
                     (data[:-4], tid))
    (problem,) = posting_problems(short)
    assert repr(term) in problem and "bytes, its terms row says" in problem
    assert n_table > 1


@NEEDS_C
def test_the_kernel_refuses_a_damaged_descriptor() -> None:
    """A coded list's width, table size and table follow its pieces: a width other than 1 or
    2, a size out of range or not the table's, and a BLOB not of that layout are ValueErrors;
    a code past the table, a ValueError naming it."""
    k = native_kernels()
    assert k is not None
    rows = np.array([1, 4, 9], dtype=np.uint32)
    table = np.array([0.5, 2.0])
    codes = np.array([1, 0, 1], dtype=np.uint8)
    blob = table.tobytes() + codes.tobytes() + b"\0" + rows.tobytes()  # 16 + 4 + 12 = 32 bytes

    def call(trailer: bytes, data: bytes = blob) -> Any:
        n_rows = 10
        out_c, out_s = np.zeros(n_rows + 1, np.int64), np.zeros(n_rows + 1)
        return k.rank_blocks([None], [None], n_rows, None, np.arange(n_rows + 1, dtype=np.int32), 10, -1.0,
                             np.zeros(64), out_c, out_s, 0.0,
                             (memoryview(data), [(3, np.array([len(data), len(data), 64, 0]).tobytes()
                                                  + trailer)]), None, None)

    n, _, _ = call(listcodes.descriptor(b"", 1, table.tobytes()))
    assert n == 3
    for trailer in (np.array([3, 2], np.int64).tobytes() + table.tobytes(),
                    np.array([1, 3], np.int64).tobytes() + table.tobytes(),
                    np.array([1, 0], np.int64).tobytes(),
                    np.array([1, 257], np.int64).tobytes() + np.zeros(257).tobytes(),
                    np.array([1], np.int64).tobytes()):
        with pytest.raises(ValueError, match="pieces"):
            call(trailer)
    with pytest.raises(ValueError, match="table, codes, rowids"):
        call(listcodes.descriptor(b"", 2, table.tobytes()))  # 2-byte codes: 36 bytes, not 32
    bad = bytearray(blob)
    bad[17] = 2
    with pytest.raises(ValueError, match="code beyond its table"):
        call(listcodes.descriptor(b"", 1, table.tobytes()), bytes(bad))
