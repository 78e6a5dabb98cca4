"""File-backed counters: percentiles, and aggregation over worker processes."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from drsearch.server.metrics import ENDPOINTS, N_BUCKETS, MetricsStore, bucket_of, quantile


def test_quantiles_are_within_ten_percent() -> None:
    rng = np.random.default_rng(0)
    samples = rng.lognormal(mean=-6, sigma=1.2, size=20_000)
    buckets = np.zeros(N_BUCKETS)
    for s in samples:
        buckets[bucket_of(float(s))] += 1
    for q in (0.5, 0.95, 0.99):
        est, exact = quantile(buckets, q), float(np.quantile(samples, q))
        assert est is not None and abs(est - exact) / exact < 0.1, (q, est, exact)
    assert quantile(np.zeros(N_BUCKETS), 0.5) is None
    assert bucket_of(0.0) == 0 and bucket_of(1e9) == N_BUCKETS - 1


def _worker(directory: str, n: int) -> None:
    store = MetricsStore(Path(directory))
    for i in range(n):
        store.observe(ENDPOINTS.index("search"), 200 if i % 4 else 422, 0.002)
    store.observe(ENDPOINTS.index("open"), 500, 0.01)
    store.observe(ENDPOINTS.index("open"), 499, 0.01)  # CLIENT_GONE
    store.close()


def test_counters_sum_over_processes_and_survive_them(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_worker, args=(str(tmp_path), n)) for n in (40, 60)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    reader = MetricsStore(tmp_path)
    snap = reader.snapshot()
    search, open_ = snap.endpoints["search"], snap.endpoints["open"]
    assert (search.requests, search.errors, search.server_errors) == (100, 25, 0)
    assert (open_.requests, open_.errors, open_.server_errors, open_.client_disconnects) == (4, 4, 2, 2)
    assert search.client_disconnects == 0
    assert search.p50_s == pytest.approx(0.002, rel=0.1)
    assert snap.workers_started == 3 and snap.workers_live == 1  # the two writers have exited
    assert search.latency_sum_s == pytest.approx(0.2)
    reader.close()


def test_foreign_files_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "worker-1.bin").write_bytes(b"junk" * 10)
    store = MetricsStore(tmp_path)
    store.observe(0, 200, 0.001)
    assert store.snapshot().endpoints[ENDPOINTS[0]].requests == 1
    store.close()


def test_in_memory_store() -> None:
    store = MetricsStore()
    store.observe(ENDPOINTS.index("health"), 200, 0.0001)
    snap = store.snapshot()
    assert snap.endpoints["health"].requests == 1 and snap.workers_started == 1
    store.close()
