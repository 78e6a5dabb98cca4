"""The engine's page reader (``blobs.MappedFile`` over ``_kernels.read_blobs``): posting-list
BLOBs copied straight from the frozen file's pages, all of a query's long lists in one call.

It must return exactly the bytes SQLite's blob API returns, for every list, whatever the
file's page size and reserved bytes per page (the usable size decides where a payload spills
to overflow pages), and a damaged file — pointers of the b-tree or of an overflow chain
overwritten, a row missing, a list of another length — must be a CorruptIndexError (or, where
the damage leaves a readable list, the same bytes), never a read outside the mapping.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path

import apsw
import numpy as np
import pytest

from drsearch.contract import CorruptIndexError, DrsearchError
from drsearch.index import Engine
from drsearch.index.blobs import Arena, read_blob
from drsearch.index.engine import EngineOptions
from drsearch.index.native import native_kernels

from ...helpers import best_chunk_per_doc, cranfield_queries, fts5_oracle
from ..page_layouts import LAYOUTS, btree_pages, damage_btree, laid_out

pytestmark = pytest.mark.skipif(native_kernels() is None, reason="the C kernel is not built")


def blob_api_bytes(e: Engine, rowid: int, nbytes: int) -> bytes:
    return bytes(read_blob(e._conn, "postings", "data", rowid, nbytes, Arena()))


def page_bytes(e: Engine, rowids: list[int], sizes: list[int]) -> list[bytes]:
    outs = [np.empty(n, dtype=np.uint8) for n in sizes]
    assert e._pages is not None
    e._pages.read_into(rowids, outs)
    return [o.tobytes() for o in outs]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_list_reads_as_the_blob_api_reads_it(cran_small_chunks: Path, tmp_path: Path,
                                                    layout: str) -> None:
    path = laid_out(cran_small_chunks, tmp_path, layout)
    with Engine.open(path) as e:
        assert e._pages is not None
        header = path.read_bytes()[:100]
        if layout == "reserved bytes":
            assert header[20] == 40 and e._pages.usable == e._pages.page_size - 40
        rows = list(e._conn.execute("SELECT id, length(data) FROM postings ORDER BY id"))
        spilled = sum(1 for _, n in rows if n > e._pages.usable - 35)
        # lists on overflow chains, not only in their leaf cells (64 KiB pages hold all of
        # this corpus's in their cells: the reader's other path)
        assert spilled == 0 if layout == "64 KiB pages" else spilled > 20
        for i in range(0, len(rows), 97):  # many lists per call, as a query's
            part = rows[i : i + 97]
            got = page_bytes(e, [r for r, _ in part], [n for _, n in part])
            assert got == [blob_api_bytes(e, r, n) for r, n in part]
    with Engine.open(path, options=EngineOptions(inline_postings=0)) as e:  # every list by the page reader
        for q in cranfield_queries()[:15]:
            assert e.rank(q, 10) == best_chunk_per_doc(e, fts5_oracle(e, q), 10), q


def test_a_missing_row_or_another_length_names_the_row(cran_small_chunks: Path) -> None:
    with Engine.open(cran_small_chunks) as e:
        rowid, n = e._conn.execute("SELECT id, length(data) FROM postings ORDER BY length(data) DESC "
                                   "LIMIT 1").fetchone()
        top = e._conn.execute("SELECT max(id) FROM postings").fetchone()[0]
        from drsearch.contract.errors import IncompatibleIndexError

        with pytest.raises(IncompatibleIndexError, match=f"postings.data row {top + 5}: no such row"):
            page_bytes(e, [rowid, top + 5], [n, 8])
        with pytest.raises(IncompatibleIndexError, match=f"postings.data row {rowid}: BLOB length"):
            page_bytes(e, [rowid], [n - 12])
        with pytest.raises(IncompatibleIndexError, match="row -1: no such row"):
            page_bytes(e, [-1], [8])


def test_a_bad_geometry_is_refused_not_read() -> None:
    kernels = native_kernels()
    assert kernels is not None
    page = bytes(4096)
    out = [bytearray(8)]
    for args in [(page, 4096, 4096, 2, 1), (page, 4000, 4000, 1, 1), (page, 4096, 100, 1, 1),
                 (page[:100], 4096, 4096, 1, 1), (page, 4096, 4096, 0, 1)]:
        with pytest.raises(ValueError, match="invalid file geometry"):
            kernels.read_blobs(*args, [1], out)
    with pytest.raises(ValueError, match="not a table b-tree page"):
        kernels.read_blobs(page, 4096, 4096, 1, 1, [1], out)  # a page of zeros
    with pytest.raises(ValueError, match="differ in length"):
        kernels.read_blobs(page, 4096, 4096, 1, 1, [1, 2], out)
    with pytest.raises(BufferError):
        kernels.read_blobs(page, 4096, 4096, 1, 1, [1], [b"read-only"])


def one_list_file(tmp_path: Path, nbytes: int = 10_000) -> tuple[bytearray, bytes]:
    """A fresh file of one postings row (rowid 7) whose BLOB spills over two overflow pages:
    page 1 the schema, 2 the table's root (a leaf), 3 and 4 the chain, in that order."""
    path = tmp_path / "one.sqlite3"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA page_size=4096")
    conn.execute("CREATE TABLE postings(id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
    blob = random.Random(1).randbytes(nbytes)
    conn.execute("INSERT INTO postings VALUES (7, ?)", (blob,))
    conn.close()
    data = bytearray(path.read_bytes())
    assert len(data) == 4 * 4096 and int.from_bytes(data[2 * 4096 : 2 * 4096 + 4], "big") == 4
    return data, blob


def read_one(data: bytes, rowid: int, nbytes: int) -> bytes:
    kernels = native_kernels()
    assert kernels is not None
    out = bytearray(nbytes)
    kernels.read_blobs(bytes(data), 4096, 4096, 2, 1, [rowid], [out])
    return bytes(out)


def test_each_pointer_the_reader_follows_is_checked(tmp_path: Path) -> None:
    data, blob = one_list_file(tmp_path)
    assert read_one(data, 7, len(blob)) == blob
    cases = [  # (what the error names, the damage)
        ("overflow page number out of range", lambda d: d.__setitem__(slice(8192, 8196), bytes(4))),
        ("overflow page number out of range", lambda d: d.__setitem__(slice(8192, 8196), b"\xff" * 4)),
        ("not a table b-tree page", lambda d: d.__setitem__(4096, 0x0A)),  # an index leaf
        ("cell pointer array beyond its page", lambda d: d.__setitem__(slice(4099, 4101), b"\xff\xff")),
        ("cell offset beyond its page", lambda d: d.__setitem__(slice(4104, 4106), b"\xff\xf0")),
        # the cell pointer aimed at the page header / the pointer array itself
        ("cell offset beyond its page", lambda d: d.__setitem__(slice(4104, 4106), (3).to_bytes(2, "big"))),
        ("cell offset beyond its page", lambda d: d.__setitem__(slice(4104, 4106), (8).to_bytes(2, "big"))),
    ]
    for why, damage in cases:
        bad = bytearray(data)
        damage(bad)
        with pytest.raises(ValueError, match=f"row 7: {why}"):
            read_one(bad, 7, len(blob))
    with pytest.raises(ValueError, match="row 8: no such row"):
        read_one(data, 8, len(blob))
    with pytest.raises(ValueError, match="row 7: BLOB length differs"):
        read_one(data, 7, len(blob) + 1)
    # An overflow page pointing at itself: the chain is followed only for the payload's length
    # (as SQLite does), so the read ends, with the page's bytes again where the next ones were.
    bad = bytearray(data)
    bad[8192:8196] = (3).to_bytes(4, "big")
    assert read_one(bad, 7, len(blob)) != blob


@pytest.mark.parametrize("seed", range(6))
def test_damaged_pages_never_read_outside_the_file(cran_small_chunks: Path, tmp_path: Path,
                                                    seed: int) -> None:
    """Overwrite pointers the reader follows in a real index — overflow pages' next-page
    numbers, b-tree cell offsets, cells' first bytes, child page numbers, cell counts — with
    random, zero, huge or self-referencing values: every list then reads (some bytes of its
    length) or is a CorruptIndexError, searches answer or fail the same way, nothing crashes."""
    rnd = random.Random(seed)
    pages = btree_pages(cran_small_chunks, "postings")
    assert pages.get("overflow") and pages.get("leaf") and pages.get("internal")
    data = bytearray(cran_small_chunks.read_bytes())
    damage_btree(data, pages, ["overflow", "leaf", "internal"], rnd, 12)
    damaged = tmp_path / "damaged.sqlite3"
    damaged.write_bytes(bytes(data))
    with Engine.open(cran_small_chunks) as good:
        rows = list(good._conn.execute("SELECT id, length(data) FROM postings ORDER BY id"))
    try:
        e = Engine.open(damaged)
    except DrsearchError:
        return  # damage the open already refuses
    with e:
        corrupt = 0
        for r, n in rows:
            try:
                assert len(page_bytes(e, [r], [n])[0]) == n
            except DrsearchError:
                corrupt += 1
        assert corrupt > 0  # the damage was seen
        for q in cranfield_queries()[:5]:
            with contextlib.suppress(CorruptIndexError):
                e.search(q, 10)


# -- chunk texts (read_texts) ----------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_chunk_text_reads_as_sqlite_reads_it(sample_index: Path, tmp_path: Path,
                                                   layout: str) -> None:
    # The sample crawl: real pages in several scripts, chunks of up to 800 words (most spill
    # to overflow pages at 4 KiB).
    path = laid_out(sample_index, tmp_path, layout)
    with Engine.open(path) as e:
        assert e._chunk_texts is not None
        rows = list(e._conn.execute("SELECT id, text, length(CAST(text AS BLOB)) FROM chunks ORDER BY id"))
        spilled = sum(1 for _, _, n in rows if n > e._chunk_texts.usable - 35)
        assert spilled == 0 if layout == "64 KiB pages" else spilled > 50
        assert any(not t.isascii() for _, t, _ in rows)
        for i in range(0, len(rows), 37):
            part = rows[i : i + 37]
            assert e._chunk_texts.read_texts([r for r, _, _ in part]) == [t for _, t, _ in part]
        # whole searches: the same hits as with the texts read by SQL
        queries = ["video game streaming subscription", "Stadia launch price", "black friday",
                   "Москва", "the"]
        paged = [e.search(q, 20) for q in queries]
        e._chunk_texts = None
        assert [e.search(q, 20) for q in queries] == paged


def test_a_text_reader_names_the_row_it_cannot_read(sample_index: Path) -> None:
    from drsearch.contract.errors import IncompatibleIndexError

    with Engine.open(sample_index) as e:
        assert e._chunk_texts is not None and e._file is not None
        top = e._conn.execute("SELECT max(id) FROM chunks").fetchone()[0]
        with pytest.raises(IncompatibleIndexError, match=f"chunks.text row {top + 1}: no such row"):
            e._chunk_texts.read_texts([1, top + 1])
        with pytest.raises(IncompatibleIndexError, match=r"postings\.data row 1: record column is not TEXT"):
            e._file.column("postings", "data").read_texts([1])
        with pytest.raises(IncompatibleIndexError, match="table nowhere cannot be read"):
            e._file.column("nowhere", "text")
        assert e._chunk_texts.read_texts([]) == []
        # a missing chunk row is corruption, not an empty hit (the SQL reader says the same)
        for reader in (e._chunk_texts, None):
            e._chunk_texts = reader
            with pytest.raises(IncompatibleIndexError, match=f"row {top + 1}: no such row"):
                e._texts([1, top + 1])


def test_text_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    kernels = native_kernels()
    assert kernels is not None
    path = tmp_path / "texts.sqlite3"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA page_size=4096")
    conn.execute("CREATE TABLE chunks(id INTEGER PRIMARY KEY, doc INTEGER, text TEXT)")
    conn.execute("INSERT INTO chunks VALUES (1, 5, ?), (2, 6, ?), (3, 7, CAST(? AS TEXT))",
                 ("short", "long ✓ " * 2000, b"\xff\xfe bad"))
    conn.close()
    data = path.read_bytes()
    root = 2
    assert kernels.read_texts(data, 4096, 4096, root, 2, [2, 1]) == ["long ✓ " * 2000, "short"]
    with pytest.raises(UnicodeDecodeError):
        kernels.read_texts(data, 4096, 4096, root, 2, [3])
    with pytest.raises(ValueError, match="row 1: record column is not TEXT"):
        kernels.read_texts(data, 4096, 4096, root, 1, [1])  # the doc column: an integer
    with pytest.raises(ValueError, match="invalid file geometry"):
        kernels.read_texts(data, 4096, 4096, 0, 2, [1])
