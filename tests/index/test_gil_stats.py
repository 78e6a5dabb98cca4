"""``_kernels.gil_stats``: each thread's account of the GIL in the kernel (time without it, time
waiting to take it back, releases), the benchmark's measure of a search's serial part. It
counts a complete search's release, belongs to the thread that made it, and sees the wait
when another thread holds the GIL."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from drsearch.index import Engine
from drsearch.index.scoring import native_kernels

kernels = native_kernels()
pytestmark = pytest.mark.skipif(kernels is None, reason="C kernel not built")

QUERIES = ["video game streaming subscription", "Stadia launch price", "black friday deals"]


def _delta(before: tuple[float, float, int], after: tuple[float, float, int]) -> tuple[float, float, int]:
    return after[0] - before[0], after[1] - before[1], after[2] - before[2]


def test_a_complete_search_lets_the_gil_go_and_the_account_says_for_how_long(sample_index: Path) -> None:
    assert kernels is not None
    with Engine.open(sample_index) as e:
        e.search(QUERIES[0], 10)  # (first-query work outside the account's interest)
        before = kernels.gil_stats()
        t0 = time.perf_counter()
        for q in QUERIES:
            assert e.search(q, 10).hits  # texts made in the ranking's call: the GIL let go
        wall = time.perf_counter() - t0
        free, wait, releases = _delta(before, kernels.gil_stats())
    assert releases >= len(QUERIES)
    assert 0.0 < free < wall and 0.0 <= wait < wall and free + wait < wall
    # without texts a short query stays under the GIL (a hand-off would cost more): no release
    with Engine.open(sample_index) as e:
        e.search("Stadia", 10, with_text=False)
        before = kernels.gil_stats()
        e.search("Stadia", 10, with_text=False)
        assert _delta(before, kernels.gil_stats())[2] == 0


def test_the_account_is_the_calling_threads_own(sample_index: Path) -> None:
    assert kernels is not None
    got: dict[str, tuple[float, float, int]] = {}
    with Engine.open(sample_index) as e:
        mine = kernels.gil_stats()

        def other() -> None:
            start = kernels.gil_stats()
            got["start"] = start
            for q in QUERIES:
                e.search(q, 10)
            got["delta"] = _delta(start, kernels.gil_stats())

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert kernels.gil_stats() == mine  # the other thread's searches are not this thread's
    assert got["start"] == (0.0, 0.0, 0)  # a new thread starts at zero
    assert got["delta"][2] >= len(QUERIES) and got["delta"][0] > 0.0


def test_a_thread_waits_to_take_the_gil_back_while_another_holds_it(sample_index: Path) -> None:
    assert kernels is not None
    got: dict[str, tuple[float, float, int]] = {}
    stop = threading.Event()
    with Engine.open(sample_index) as e:
        for q in QUERIES:
            e.search(q, 10)

        def serve() -> None:
            start = kernels.gil_stats()
            while not stop.is_set():
                for q in QUERIES:
                    e.search(q, 10)
            got["delta"] = _delta(start, kernels.gil_stats())

        t = threading.Thread(target=serve)
        t.start()
        end = time.perf_counter() + 0.3
        x = 0
        while time.perf_counter() < end:  # pure Python: holds the GIL until made to let it go
            x += 1
        stop.set()
        t.join()
    free, wait, releases = got["delta"]
    assert free > 0.0
    assert releases > 0 and x > 0
    # each time the searching thread came back from the kernel this thread held the GIL, for
    # up to the interpreter's switch interval (5 ms): far more than uncontended take-backs
    assert wait > 0.001
