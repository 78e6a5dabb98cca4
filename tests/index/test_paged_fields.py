"""The document fields read from the file's pages (``_kernels.blob_pieces``,
``doctable.PagedFields``, ``make_hits`` with pieces): every span of a BLOB reads as SQLite
reads it, whatever the page size, the reserved bytes and where the value starts in its
record; the hits equal those made from the BLOB's bytes; damage is an error, never a read
outside the file."""

from __future__ import annotations

import random
from pathlib import Path

import apsw
import numpy as np
import pytest

from drsearch.contract import Hit, IncompatibleIndexError
from drsearch.index import Engine
from drsearch.index.blobs import MappedFile
from drsearch.index.doctable import DocTable, PagedFields
from drsearch.index.native import native_kernels

from .page_layouts import LAYOUTS, laid_out

pytestmark = pytest.mark.skipif(native_kernels() is None, reason="the C kernel is not built")

# Sizes about every boundary: in the leaf cell, just spilling, whole overflow pages ± 1.
SIZES = [0, 1, 100, 400, 480, 1000, 1020, 1021, 4061, 4062, 4092, 4093, 8184, 8185, 70_000, 300_001]


def _file(tmp_path: Path, page_size: int, reserve: int, prefix: int) -> tuple[Path, dict[int, bytes]]:
    """A rowid table like ``arrays`` (a TEXT of ``prefix`` bytes and a TEXT before the BLOB,
    which moves where the value starts in its record), one row per size."""
    import ctypes

    path = tmp_path / f"t-{page_size}-{reserve}-{prefix}.sqlite3"
    conn = apsw.Connection(str(path))
    if reserve:
        value = ctypes.c_int(reserve)
        conn.file_control("main", apsw.SQLITE_FCNTL_RESERVE_BYTES, ctypes.addressof(value))
    conn.execute(f"PRAGMA page_size={page_size}")
    conn.execute("CREATE TABLE arrays(name TEXT PRIMARY KEY, dtype TEXT NOT NULL, data BLOB NOT NULL)")
    rng = random.Random(page_size + reserve + prefix)
    blobs: dict[int, bytes] = {}
    with conn:
        for i, n in enumerate(SIZES):
            data = rng.randbytes(n)
            rowid = conn.execute("INSERT INTO arrays VALUES (?, ?, ?) RETURNING rowid",
                                 ("x" * prefix + str(i), "u1", data)).get
            blobs[rowid] = data
    conn.close()
    return path, blobs


@pytest.mark.parametrize(("page_size", "reserve", "prefix"),
                         [(512, 0, 1), (1024, 0, 300), (4096, 0, 5), (4096, 40, 2000), (65536, 0, 9)])
def test_every_span_reads_as_sqlite_reads_it(tmp_path: Path, page_size: int, reserve: int,
                                             prefix: int) -> None:
    path, blobs = _file(tmp_path, page_size, reserve, prefix)
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    f = MappedFile(path, conn)
    try:
        col = f.column("arrays", "data")
        rng = random.Random(7)
        for rowid, data in blobs.items():
            paged = PagedFields(f.pages, col.pieces(rowid))
            assert len(paged) == len(data) and paged[:] == data
            for _ in range(40):
                a = rng.randrange(len(data) + 1)
                b = rng.randrange(a, min(len(data), a + 3 * page_size) + 1)
                assert paged[a:b] == data[a:b], (rowid, a, b)
        with pytest.raises(IncompatibleIndexError, match="row 9999"):
            col.pieces(9999)
        with pytest.raises(IncompatibleIndexError, match="not a BLOB"):
            f.column("arrays", "dtype").pieces(1)
    finally:
        f.close()
        conn.close()


def test_hits_from_the_pages_equal_hits_from_the_bytes(tmp_path: Path) -> None:
    """make_hits with pieces against make_hits with the same bytes, every document, fields
    that cross page boundaries included (4 KiB pages, ~60 KB of fields)."""
    kernels = native_kernels()
    assert kernels is not None
    rng = random.Random(3)
    rows = [(d, f"doc-{d}", "https://example.org/" + "é" * rng.randrange(0, 300), "t" * rng.randrange(0, 90))
            for d in range(1, 301)]
    table = DocTable.from_rows(rows, 300)
    offsets, data = table.arrays()
    path = tmp_path / "fields.sqlite3"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE arrays(name TEXT PRIMARY KEY, dtype TEXT NOT NULL, data BLOB NOT NULL)")
    conn.execute("INSERT INTO arrays VALUES ('doc_fields', 'u1', ?)", (data,))
    f = MappedFile(path, conn)
    try:
        pieces = f.column("arrays", "data").pieces(1)
        paged = DocTable(PagedFields(f.pages, pieces), np.frombuffer(offsets, "<i8"))
        cd = np.arange(301, dtype=np.int32)  # chunk c is document c's only chunk
        co = np.zeros(301, dtype=np.int32)
        chunks = list(range(1, 301))
        scores = [float(c) for c in chunks]
        o, whole_file, pcs = paged.fields()
        assert pcs == pieces
        assert kernels.make_hits(Hit, chunks, scores, cd, co, o, whole_file, pcs) == \
            kernels.make_hits(Hit, chunks, scores, cd, co, table.fields()[0], data)
        assert paged.get(chunks) == table.get(chunks) == [r[1:] for r in rows]
        assert paged.arrays() == table.arrays()
        # a pieces table pointing past the file: refused when made, and by make_hits itself
        bad = bytearray(pieces)
        bad[24:32] = (len(f.pages) - 10).to_bytes(8, "little", signed=True)
        with pytest.raises(ValueError, match="malformed"):
            PagedFields(f.pages, bytes(bad))
        with pytest.raises(ValueError, match="outside the file"):
            kernels.make_hits(Hit, chunks, scores, cd, co, o, whole_file, bytes(bad))
        with pytest.raises(ValueError, match="malformed pieces header"):
            kernels.make_hits(Hit, chunks, scores, cd, co, o, whole_file, pieces[:8] + bytes(16) + pieces[24:])
    finally:
        f.close()
        conn.close()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_engine_reads_its_fields_from_the_pages(sample_index: Path, tmp_path: Path, layout: str) -> None:
    path = laid_out(sample_index, tmp_path, layout)
    with Engine.open(path) as e:
        table = e._doc_table()
        assert isinstance(table._data, PagedFields)
        stored = e._conn.execute("SELECT data FROM arrays WHERE name = 'doc_fields'").get
        assert table._data[:] == stored
        ids = [r[0] for r in e._conn.execute("SELECT id FROM documents ORDER BY id")]
        assert table.get(ids) == list(e._conn.execute("SELECT docid, url, title FROM documents ORDER BY id"))
        for q in ["solar energy", "the", "history of the printing press"]:
            ranked = e.search(q, 100, with_text=False).hits
            full = e.search(q, 100).hits
            assert [h[:6] for h in full] == [h[:6] for h in ranked] and full
            assert all(h.chunk_text for h in full)
