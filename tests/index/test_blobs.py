"""Posting lists read into a reused arena: same results whatever the arena's size or thread."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from drsearch.index import Engine
from drsearch.index.blobs import Arena

from ..helpers import cranfield_queries

QUERIES = cranfield_queries()[:60]


def test_arena_slices_are_aligned_and_grow() -> None:
    arena = Arena(capacity=32, max_capacity=256)
    a = arena.take(5)
    b = arena.take(8)
    assert a.ctypes.data % 8 == 0 and b.ctypes.data % 8 == 0
    a[:] = 1
    b[:] = 2
    c = arena.take(100)  # grows into a new buffer; a and b stay intact
    c[:] = 3
    assert a.tolist() == [1] * 5 and b.tolist() == [2] * 8
    big = arena.take(1000)  # beyond max_capacity / 2: fresh memory
    assert len(big) == 1000
    arena.reset()
    assert arena.take(4).ctypes.data % 8 == 0


@pytest.mark.parametrize(("capacity", "max_capacity"), [(8, 64), (1024, 4096), (8 << 20, 64 << 20)])
def test_results_do_not_depend_on_the_arena(cran_small_chunks: Path, capacity: int, max_capacity: int) -> None:
    with Engine.open(cran_small_chunks) as reference, Engine.open(cran_small_chunks) as e:
        e._local.arena = Arena(capacity, max_capacity)
        for q in QUERIES:
            assert e.rank(q, 20) == reference.rank(q, 20)


def test_concurrent_threads_share_an_engine_safely(cran_small_chunks: Path) -> None:
    with Engine.open(cran_small_chunks) as e:
        expected = [e.search(q, 10).to_dict() for q in QUERIES]
        with ThreadPoolExecutor(4) as pool:
            for _ in range(3):
                got = list(pool.map(lambda q: e.search(q, 10).to_dict(), QUERIES))
                assert got == expected
        assert np.count_nonzero(e._scratch().acc) == 0  # scratch handed back clean
