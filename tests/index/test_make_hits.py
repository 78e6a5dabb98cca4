"""Ranked hits without text made in C (``_kernels.make_hits``): the same Hit values, types and
bytes as the Python path builds, and a loud error for a damaged document table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from drsearch.contract import Hit
from drsearch.contract.request import canonical_json
from drsearch.index import BlockList, Engine
from drsearch.index.native import native_kernels

from ..helpers import cranfield_queries

pytestmark = pytest.mark.skipif(native_kernels() is None, reason="the C kernel is not built")


def both_paths(e: Engine, q: str, k: int) -> tuple[list[Hit], list[Hit]]:
    assert e._kernel
    c = e.search(q, k, with_text=False).hits
    e._kernel = False
    try:
        py = e.search(q, k, with_text=False).hits
    finally:
        e._kernel = True
    return c, py


@pytest.mark.parametrize("blocked", [False, True])
def test_hits_made_in_c_equal_the_python_ones(sample_index: Path, blocked: bool) -> None:
    bl = BlockList.empty()
    with Engine.open(sample_index) as e:
        if blocked:
            docids = [h.docid for h in e.search("solar energy", 5).hits]
            bl = BlockList.from_bytes("\n".join(docids[:3]).encode())
    with Engine.open(sample_index, bl) as e:
        queries = ["solar energy", "the", "history of the printing press", "zzqqxx", "a b c",
                   "photosynthesis chlorophyll light"]
        for q in queries:
            for k in (1, 10, 100):
                c, py = both_paths(e, q, k)
                assert c == py, (q, k)
                assert all(type(h) is Hit for h in c)
                assert [canonical_json(h.to_dict()) for h in c] == [canonical_json(h.to_dict()) for h in py]
                assert [h.rank for h in c] == list(range(1, len(c) + 1))
                assert not blocked or not {h.docid for h in c} & bl.docids


def test_many_queries_on_a_chunked_corpus(cran_small_chunks: Path) -> None:
    with Engine.open(cran_small_chunks) as e:
        for q in cranfield_queries()[:30]:
            c, py = both_paths(e, q, 100)
            assert c == py and len(c) > 10, q
            assert all(isinstance(h.score, float) and isinstance(h.chunk_ordinal, int) for h in c)


def _table() -> tuple[np.ndarray, np.ndarray, np.ndarray, bytes]:
    """Two documents: rowid 1 ("a", "u1", "t1"), rowid 2 absent, rowid 3 ("c", "u3", "");
    chunks 1-2 of document 1, chunk 3 of document 3, chunk 4 of the absent document 2."""
    data = b"au1t1cu3"
    offsets = np.array([0, 0, 0, 0, 1, 3, 5, 5, 5, 5, 6, 8, 8], dtype=np.int64)
    chunk_doc = np.array([0, 1, 1, 3, 2], dtype=np.int32)
    chunk_ord = np.array([0, 0, 1, 0, 0], dtype=np.int32)
    return chunk_doc, chunk_ord, offsets, data


def test_the_fields_of_each_hit_and_every_damage_is_a_value_error() -> None:
    k = native_kernels()
    assert k is not None
    cd, co, offs, data = _table()
    hits = k.make_hits(Hit, [3, 2], [2.5, 1.0], cd, co, offs, data)
    assert hits == [Hit(1, "c", "u3", "", 2.5, 0), Hit(2, "a", "u1", "t1", 1.0, 1)]
    assert k.make_hits(Hit, [], [], cd, co, offs, data) == []
    for chunks, why in [([0], "chunk rowid 0 out of range"), ([5], "chunk rowid 5 out of range"),
                        ([4], "document rowid 2 has no docid")]:
        with pytest.raises(ValueError, match=why):
            k.make_hits(Hit, chunks, [1.0], cd, co, offs, data)
    with pytest.raises(ValueError, match="outside the field table"):
        k.make_hits(Hit, [1], [1.0], cd, co, offs, data[:3])
    with pytest.raises(UnicodeDecodeError):
        k.make_hits(Hit, [1], [1.0], cd, co, offs, b"\xffu1t1cu3")
    with pytest.raises(ValueError, match="differ in length"):
        k.make_hits(Hit, [1, 2], [1.0], cd, co, offs, data)
    with pytest.raises(TypeError, match="tuple subclass"):
        k.make_hits(dict, [1], [1.0], cd, co, offs, data)


def test_texts_and_snippets_go_into_the_hits_as_given() -> None:
    k = native_kernels()
    assert k is not None
    cd, co, offs, data = _table()
    text, snip = "chunk three ✓ " * 3, "…three ✓"
    hits = k.make_hits(Hit, [3, 2], [2.5, 1.0], cd, co, offs, data, None, [text, "a"], [snip, ""])
    assert hits == [Hit(1, "c", "u3", "", 2.5, 0, text, snip), Hit(2, "a", "u1", "t1", 1.0, 1, "a", "")]
    assert hits[0].chunk_text is text and hits[0].snippet is snip  # the objects, not copies
    assert k.make_hits(Hit, [3], [2.5], cd, co, offs, data, None) == [Hit(1, "c", "u3", "", 2.5, 0)]
    assert k.make_hits(Hit, [], [], cd, co, offs, data, None, [], []) == []
    with pytest.raises(ValueError, match="differ in length"):
        k.make_hits(Hit, [3, 2], [2.5, 1.0], cd, co, offs, data, None, ["x"], ["y", "z"])
    with pytest.raises(ValueError, match="differ in length"):
        k.make_hits(Hit, [3], [2.5], cd, co, offs, data, None, ["x", "y"], ["y", "z"])
    with pytest.raises(TypeError, match="come together"):
        k.make_hits(Hit, [3], [2.5], cd, co, offs, data, None, ["x"])
    with pytest.raises(TypeError, match="come together"):
        k.make_hits(Hit, [3], [2.5], cd, co, offs, data, None, None, ["x"])
    with pytest.raises(TypeError, match="not a str"):
        k.make_hits(Hit, [3], [2.5], cd, co, offs, data, None, [b"x"], ["y"])
    with pytest.raises(TypeError, match="not a str"):
        k.make_hits(Hit, [3], [2.5], cd, co, offs, data, None, ["x"], [None])
    with pytest.raises(TypeError):
        k.make_hits(Hit, [3], [2.5], cd, co, offs, data, 7)  # pieces: a buffer or None


def test_a_damaged_document_table_is_corrupt_not_a_crash(sample_index: Path) -> None:
    from drsearch.contract import CorruptIndexError

    with Engine.open(sample_index) as e:
        table = e._doc_table()
        _, data = table.arrays()  # the fields' bytes (held as bytes now, not read from pages)
        table._data = data[: len(data) // 2]  # fields past the half now point outside
        with pytest.raises(CorruptIndexError, match=r"outside the field table|decode"):
            for q in ["solar energy", "the", "history", "water", "music", "war"]:
                e.search(q, 100, with_text=False)
