"""The in-memory (docid, url, title) table behind ranked results."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from drsearch.index import Engine
from drsearch.index.doctable import DocTable


def test_fields_round_trip_with_unicode_and_gaps() -> None:
    rows = [(1, "a", "https://x/1", "Título ✓"), (2, "b", "", ""), (5, "é", "u", "t" * 1000)]
    table = DocTable.from_rows(rows, 6)
    assert len(table) == 3
    assert table.get([5, 1, 2]) == [("é", "u", "t" * 1000), ("a", "https://x/1", "Título ✓"),
                                    ("b", "", "")]
    for missing in (0, 3, 4, 6, 7, -1):
        with pytest.raises(KeyError):
            table.get([missing])


def test_rows_must_ascend_within_range() -> None:
    with pytest.raises(ValueError, match="ascend"):
        DocTable.from_rows([(2, "a", "u", "t"), (1, "b", "u", "t")], 3)
    with pytest.raises(ValueError, match="ascend"):
        DocTable.from_rows([(4, "a", "u", "t")], 3)
    offsets, data = DocTable.from_rows([(1, "a", "u", "t")], 1).arrays()
    good = np.frombuffer(offsets, dtype="<i8")
    assert DocTable(data, good).get([1]) == [("a", "u", "t")]
    for bad in (good[:-1], good[::-1].copy(), good + 1):
        with pytest.raises(ValueError, match="malformed"):
            DocTable(data, bad)


def test_from_rows_memory_is_the_data_not_an_object_per_field() -> None:
    """A build's document table (``_Writing.arrays``) of many short passages: the peak is the
    fields' bytes and offsets, not a Python object per field (at 2,000,000 passages a list
    of 6,000,000 ``bytes`` took the build's writing process to 1.4 GB)."""
    import tracemalloc

    n = 100_000
    rows = ((i, str(i - 1), f"passage:{i - 1}", f'"Article {i // 40}"') for i in range(1, n + 1))
    tracemalloc.start()
    try:
        table = DocTable.from_rows(rows, n)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    offsets, data = table.arrays()
    assert table.get([1, n]) == [("0", "passage:0", '"Article 0"'),
                                 (str(n - 1), f"passage:{n - 1}", f'"Article {n // 40}"')]
    # the buffer, its copy into bytes and the offsets; a list of bytes objects is ~8x the data
    assert peak < 3 * len(data) + 2 * len(offsets) + (1 << 20), (peak, len(data), len(offsets))


def test_engine_hits_match_the_documents_table(sample_index: Path) -> None:
    with Engine.open(sample_index) as e:
        rows = {r[0]: r[1:] for r in e._db().execute("SELECT docid, url, title FROM documents")}
        for q in ["video game streaming", "Stadia launch price", "climate", "the"]:
            for h in e.search(q, k=100, with_text=False).hits:
                assert rows[h.docid] == (h.url, h.title)


def test_first_searches_from_many_threads_load_it_once(sample_index: Path) -> None:
    with Engine.open(sample_index) as e:
        results: list[list[str]] = []
        errors: list[BaseException] = []

        def work() -> None:
            try:
                results.append([h.docid for h in e.search("video game streaming", 5).hits])
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not errors and len(results) == 8 and all(r == results[0] for r in results)


def test_the_build_stores_the_table_and_old_files_fall_back_to_rows(sample_index: Path,
                                                                     tmp_path: Path) -> None:
    import shutil

    import apsw

    with Engine.open(sample_index) as e:
        assert e._docs is not None  # loaded at open from the arrays table
        expected = e.search("video game streaming subscription", 20, with_text=False).hits
    old = tmp_path / "old.sqlite3"
    shutil.copy(sample_index, old)
    conn = apsw.Connection(str(old))
    conn.execute("DELETE FROM arrays WHERE name IN ('doc_fields', 'doc_field_offsets')")
    conn.close()
    with Engine.open(old) as e:
        assert e._docs is None
        assert e.search("video game streaming subscription", 20, with_text=False).hits == expected
        assert e._docs is not None


def test_few_and_many_rows_are_read_alike() -> None:
    """Up to 16 rows are read one by one, more with one numpy gather: the same fields, and
    the same KeyError (the first unknown rowid) either way."""
    from drsearch.index.doctable import _FEW

    rows = [(d, f"id{d}", f"https://x/{d}", f"T{d} ✓") for d in range(1, 60) if d % 7]
    table = DocTable.from_rows(rows, 60)
    want = {d: (a, b, c) for d, a, b, c in rows}
    known = sorted(want)
    for n in (1, _FEW, _FEW + 1, len(known)):
        ids = known[-n:][::-1]
        assert table.get(ids) == [want[d] for d in ids]
        assert table.get(np.array(ids, dtype=np.int64)) == [want[d] for d in ids]  # numpy ints too
    for n in (3, _FEW + 5):
        for bad in (7, 0, 60, -2):  # a gap, rowid 0, past the end, negative
            ids = [*known[: n - 1], bad]
            with pytest.raises(KeyError) as info:
                table.get(ids)
            assert info.value.args == (bad,)


def test_the_build_writes_its_arrays_without_sqlite_copying_them(tmp_path: Path) -> None:
    """``_Writing.arrays`` at the end of a build: the document fields' BLOB (here 12 MB) is
    written in place, so SQLite's own memory rises by about its size, the pages it fills (1.1x
    measured; bound as a value it rose by 3.1x: the bound copy and the record besides, the
    writing side's peak at 2M passages); the rows are the table ``DocTable.from_rows`` makes."""
    import importlib
    from types import SimpleNamespace

    import apsw

    from drsearch.index.settings import BuildSettings

    b = importlib.import_module("drsearch.index.build")
    conn = b._open_output(tmp_path / "x.sqlite3")
    b._init_output(conn, BuildSettings())
    rows = [(i, f"p{i}", f"passage:p{i}", f"title {i} " + "t" * 6000) for i in range(1, 2001)]
    conn.executemany("INSERT INTO documents VALUES(?,?,?,?,?,?,?,?)",
                     [(i, d, u, u, t, "{}", 1, 1) for i, d, u, t in rows])
    ints = np.arange(2001, dtype=np.int32).tobytes()
    offsets, data = DocTable.from_rows(rows, 2000).arrays()
    apsw.memory_high_water(True)
    before = apsw.memory_used()
    b._Writing(conn, None).arrays(SimpleNamespace(chunk_doc=ints, chunk_len=ints, chunk_ordinal=ints))
    rose = apsw.memory_high_water(True) - before
    stored = dict(conn.execute("SELECT name, data FROM arrays"))
    conn.execute("COMMIT")
    conn.close()
    assert stored == {"chunk_doc": ints, "chunk_len": ints, "chunk_ordinal": ints,
                      "doc_field_offsets": offsets, "doc_fields": data}
    assert len(data) > 12_000_000 and rose < 1.5 * len(data), (rose, len(data))
