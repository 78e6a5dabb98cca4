"""The term rows read from the file's pages (``blobs.MappedRows`` over ``_kernels.find_rows``):
a WITHOUT ROWID table's index b-tree searched by its TEXT key, one call for a query's terms.

It must return exactly SQLite's rows — every term of real indexes, on every page layout, the
REAL column as SQLite reads it (integral values are stored as integers) — None for every key
that is not there, hand a key whose cell spills off its page back to SQLite, and turn damage
into an error naming the key, never a read outside the mapping.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import apsw
import pytest

from drsearch.contract import DrsearchError
from drsearch.contract.errors import IncompatibleIndexError
from drsearch.index import Engine
from drsearch.index.native import native_kernels

from ..helpers import cranfield_queries
from .page_layouts import LAYOUTS, btree_pages, damage_btree, laid_out

kernels = native_kernels()
pytestmark = pytest.mark.skipif(kernels is None, reason="the C kernel is not built")


def sql_rows(e: Engine) -> dict[str, tuple[int, int, int, float, int, int]]:
    return {t: (i, df, dense, top, width, n_table) for t, i, df, dense, top, width, n_table in
            e._conn.execute("SELECT term, id, df, dense, max_impact, width, n_table FROM terms")}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("index", ["sample", "cranfield"])
def test_every_term_is_found_as_sqlite_finds_it(sample_index: Path, cran_index: Path, tmp_path: Path,
                                                layout: str, index: str) -> None:
    path = laid_out(sample_index if index == "sample" else cran_index, tmp_path, layout)
    with Engine.open(path) as e:
        assert e._term_rows is not None
        want = sql_rows(e)
        depth = e._conn.execute("SELECT count(*) FROM dbstat WHERE name = 'terms' AND pagetype = 'internal'").get
        assert depth > 0 or layout == "64 KiB pages"  # interior pages searched too
        terms = sorted(want)
        got = e._term_rows.find(terms)
        assert got is not None
        assert dict(zip(terms, got, strict=True)) == want
        assert all(type(r[3]) is float for r in got if r is not None)
        if index == "sample":
            assert any(not t.isascii() for t in terms)
        # keys that are not there: neighbours of real ones in byte order, and others
        rnd = random.Random(7)
        absent = ["", "\x00", "\U0010ffff", "zzzzzzzz", *(t + "\x00" for t in terms[::50]),
                  *(t[:-1] for t in terms[::37] if len(t) > 1 and t[:-1] not in want),
                  *("".join(rnd.choice("abcdeéß東") for _ in range(rnd.randrange(1, 9))) for _ in range(300))]
        absent = [a for a in absent if a not in want]
        assert e._term_rows.find(absent) == [None] * len(absent)


def test_searches_answer_the_same_with_sql_term_rows(cran_index: Path) -> None:
    queries = cranfield_queries()[:40]
    with Engine.open(cran_index) as e:
        paged = [e.search(q, 10).to_dict() for q in queries]
        e._term_rows = None
        assert [e.search(q, 10).to_dict() for q in queries] == paged


def _table(tmp_path: Path, rows: list[tuple[str, int, int, int, float | int]], page_size: int = 4096) -> bytes:
    path = tmp_path / "terms.sqlite3"
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA page_size={page_size}")
    conn.execute("CREATE TABLE terms(term TEXT PRIMARY KEY, id INTEGER NOT NULL, df INTEGER NOT NULL, "
                 "dense INTEGER NOT NULL, max_impact REAL NOT NULL) WITHOUT ROWID")
    conn.executemany("INSERT INTO terms VALUES (?, ?, ?, ?, ?)", rows)
    conn.close()
    return path.read_bytes()


def test_numbers_of_every_serial_type_read_as_sqlite_reads_them(tmp_path: Path) -> None:
    assert kernels is not None
    values = [0, 1, -1, 127, -128, 255, 32767, -32768, 2**23, -(2**23), 2**31 - 1, -(2**31),
              2**47, -(2**47), 2**63 - 1, -(2**63)]
    reals = [0.0, 1.0, -1.0, 2.5, 1e-300, -7.0, 2.0**52, 12345.678, float(2**40)]
    rows = [(f"t{i:03d}", v, i, i % 2, reals[i % len(reals)]) for i, v in enumerate(values)]
    data = _table(tmp_path, rows)
    found = kernels.find_rows(data, 4096, 4096, 2, [r[0] for r in rows], [1, 2, 3, 4], "iiir")
    assert found == [r[1:] for r in rows]
    assert all(type(f[3]) is float for f in found if f)
    with pytest.raises(ValueError, match="not an INTEGER"):
        kernels.find_rows(data, 4096, 4096, 2, ["t002"], [4], "i")  # 2.5 is no integer


def test_a_key_that_spills_is_handed_back_to_sqlite(tmp_path: Path) -> None:
    assert kernels is not None
    long_key = "k" * 3000  # over an index cell's local limit at 4 KiB pages
    rows = [(f"a{i:04d}", i, 1, 0, 1.5) for i in range(400)] + [(long_key, 9999, 2, 0, 0.5)]
    data = _table(tmp_path, rows)
    assert kernels.find_rows(data, 4096, 4096, 2, ["a0001", long_key], [1], "i") is None
    assert kernels.find_rows(data, 4096, 4096, 2, ["a0001", "a0399"], [1], "i") == [(1,), (399,)]


def test_the_engine_asks_sqlite_when_the_pages_cannot_answer(cran_index: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    queries = cranfield_queries()[:10]
    with Engine.open(cran_index) as e:
        want = [e.search(q, 10).to_dict() for q in queries]
        assert e._term_rows is not None
        monkeypatch.setattr(e._term_rows, "find", lambda keys: None)
        assert [e.search(q, 10).to_dict() for q in queries] == want


def test_bad_arguments_and_a_rowid_table_are_refused(tmp_path: Path, cran_index: Path) -> None:
    assert kernels is not None
    data = _table(tmp_path, [("a", 1, 1, 0, 1.0)])
    with pytest.raises(ValueError, match="invalid file geometry"):
        kernels.find_rows(data, 4096, 4096, 0, ["a"], [1], "i")
    with pytest.raises(ValueError, match="differ in length"):
        kernels.find_rows(data, 4096, 4096, 2, ["a"], [1, 2], "i")
    with pytest.raises(ValueError, match="a kind not"):
        kernels.find_rows(data, 4096, 4096, 2, ["a"], [1], "x")
    with pytest.raises(TypeError, match="not a str"):
        kernels.find_rows(data, 4096, 4096, 2, [b"a"], [1], "i")
    with Engine.open(cran_index) as e:
        assert e._file is not None
        postings = e._file.rows("postings", ["data"], "i")  # a rowid table, not an index b-tree
        with pytest.raises(IncompatibleIndexError, match="not an index b-tree page"):
            postings.find(["x"])
        with pytest.raises(IncompatibleIndexError, match="cannot be read by pages"):
            e._file.rows("terms", ["nowhere"], "i")


@pytest.mark.parametrize("seed", range(6))
def test_damaged_term_pages_never_read_outside_the_file(cran_index: Path, tmp_path: Path, seed: int) -> None:
    """Overwrite the terms b-tree's pointers (cell offsets, cell bytes, child page numbers,
    cell counts) with random, zero, huge or self-referencing values: every lookup then finds a
    row, none, hands back to SQLite, or is an error naming the key; nothing crashes."""
    rnd = random.Random(seed)
    pages = btree_pages(cran_index, "terms")
    assert pages.get("leaf") and pages.get("internal")
    data = bytearray(cran_index.read_bytes())
    damage_btree(data, pages, ["leaf", "internal"], rnd, 10, cell_tail=b"\xff\xff")
    damaged = tmp_path / "damaged.sqlite3"
    damaged.write_bytes(bytes(data))
    with Engine.open(cran_index) as good:
        terms = sorted(sql_rows(good))
    try:
        e = Engine.open(damaged)
    except DrsearchError:
        return
    with e:
        assert e._term_rows is not None
        errors = 0
        for i in range(0, len(terms), 50):
            try:
                e._term_rows.find(terms[i : i + 50])
            except IncompatibleIndexError:
                errors += 1
        assert errors > 0  # the damage was seen
        for q in cranfield_queries()[:5]:
            with contextlib.suppress(DrsearchError):
                e.search(q, 10)
