"""``_kernels.gil_stats``: each thread's account of the GIL in the kernel (time without it, time
waiting to take it back, releases), the benchmark's measure of a search's serial part. It
counts a complete search's release, belongs to the thread that made it, and sees the wait
when another thread holds the GIL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from drsearch.index import Engine, gil_poll_ns
from drsearch.index.native import native_kernels

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


@pytest.fixture()
def spin_bound() -> Iterator[int]:
    """The kernel's spin bound, set back after the test."""
    assert kernels is not None
    before = kernels.gil_spin()
    yield before
    kernels.gil_spin(before)


def test_the_poll_bound_is_200_us_in_a_fresh_process() -> None:
    """(A fresh process: a server app made earlier in this one sets it to 0.)"""
    got = subprocess.run([sys.executable, "-c", "from drsearch.index import gil_poll_ns; print(gil_poll_ns())"],
                         capture_output=True, text=True, check=True)
    if got.stdout.strip() == "-1":
        pytest.skip("this CPython's GIL cannot be read: no polling")
    assert got.stdout.strip() == "200000"


def test_the_poll_bound_is_read_and_set_for_every_thread(spin_bound: int) -> None:
    assert kernels is not None
    if spin_bound < 0:
        pytest.skip("this CPython's GIL cannot be read: no polling")
    assert gil_poll_ns(0) == spin_bound and gil_poll_ns() == 0 and kernels.gil_spin() == 0
    seen: list[int] = []
    t = threading.Thread(target=lambda: seen.append(gil_poll_ns(5_000)))
    t.start()
    t.join()
    assert seen == [0] and gil_poll_ns() == 5_000  # one bound, whatever thread sets it
    for bad in (-1, 100_000_001):
        with pytest.raises(ValueError, match="not within 0 and 100,000,000"):
            gil_poll_ns(bad)
    assert gil_poll_ns() == 5_000  # (unchanged by the refusals)
    with pytest.raises(TypeError):
        kernels.gil_spin("1")


@pytest.mark.parametrize("bound", [0, 200_000, 50_000_000])
def test_threads_searching_together_get_one_threads_answers(sample_index: Path, spin_bound: int,
                                                             bound: int) -> None:
    assert kernels is not None
    gil_poll_ns(bound)
    with Engine.open(sample_index) as e:
        want = [e.search(q, 10) for q in QUERIES]
        got: dict[int, list[object]] = {}

        def serve(i: int) -> None:
            got[i] = [e.search(q, 10) for _ in range(20) for q in QUERIES]

        threads = [threading.Thread(target=serve, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)  # no thread left spinning or waiting
    assert all(got[i] == want * 20 for i in range(3))


def test_a_thread_spins_at_most_the_bound_for_another_kernel_threads_python(sample_index: Path,
                                                                          spin_bound: int) -> None:
    """Thread B runs pure Python for a second, holding the GIL but when made to let it go.
    Thread A searches meanwhile; each time A comes back from the kernel and finds the GIL held
    (B took it back while A worked), it polls for the bound (20 ms), then waits in CPython,
    which makes B let the GIL go within its switch interval (5 ms): such a wait is at least the
    bound, and far less than B's second. (A wait may also be short: B had not yet taken the GIL
    back when A came back.)"""
    assert kernels is not None
    if spin_bound < 0:
        pytest.skip("this CPython's GIL cannot be read: no polling")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no core for a poller, so the kernel never polls")
    gil_poll_ns(20_000_000)
    waits: list[float] = []
    started, done = threading.Event(), threading.Event()
    with Engine.open(sample_index) as e:
        for q in QUERIES:
            e.search(q, 10)

        def hog() -> None:
            started.set()
            end = time.perf_counter() + 1.0
            while time.perf_counter() < end:
                pass
            done.set()

        def search() -> None:
            started.wait()
            while not done.is_set():
                before = kernels.gil_stats()
                e.search(QUERIES[1], 10)
                _, wait, releases = _delta(before, kernels.gil_stats())
                if releases:
                    waits.append(wait)

        b, a = threading.Thread(target=hog), threading.Thread(target=search)
        b.start()
        a.start()
        a.join()
        b.join()
    assert waits
    assert 0.02 <= max(waits) < 0.5
