"""Request counters shared by all worker processes of one server run, kept in files.

Each worker process owns one memory-mapped file ``worker-<pid>.bin`` in the run's
``metrics_dir`` and is its only writer; a reader (any worker answering /stats or
/metrics) sums every file in the directory, so the numbers are the whole server's,
and a worker that died (and was replaced by uvicorn) still counts. Latencies go into
fixed log-spaced buckets (×1.1 from 10 µs), so p50/p95/p99 are estimated within 5%
and aggregate exactly across workers. With no directory the counters live in an
anonymous mapping and cover this process only (tests, in-process use).

Why not prometheus_client's multiprocess mode: it picks its storage from an
environment variable at import time and keeps process-global registries (two apps in
one test process would share counters), and its histograms would need the same bucket
arithmetic for percentiles anyway. /metrics renders these counters in Prometheus text.

Nothing here tells a blocked document from a missing one: both are a 404 of ``open``.

File layout: float64 words. Header ``[MAGIC, LAYOUT, pid, started_unix]``, then four
reserved words, then one row per endpoint: ``[requests, errors (status >= 400),
server_errors (>= 500), latency_sum_s, client_disconnects, buckets...]``.
"""

from __future__ import annotations

import math
import mmap
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ..contract.dirlock import pid_alive

ENDPOINTS = ("search", "open", "retrieve", "health", "stats", "metrics", "openapi", "docs", "other")
N_BUCKETS = 200
BUCKET_BASE_S = 1e-5
BUCKET_FACTOR = 1.1
_MAGIC = float(0x4452534D)  # "DRSM"
CLIENT_GONE = 499  # nginx's convention: the client went away before the answer
_LAYOUT = float(2_000_000 + 1000 * N_BUCKETS + len(ENDPOINTS))
_HEADER = 4
_GLOBALS = 4
_FIELDS = 5
_ROW = _FIELDS + N_BUCKETS
_WORDS = _HEADER + _GLOBALS + _ROW * len(ENDPOINTS)
_LOG_FACTOR = math.log(BUCKET_FACTOR)


def bucket_of(seconds: float) -> int:
    """The latency bucket of a duration: bucket i holds [BASE·F^i, BASE·F^(i+1))."""
    if seconds <= BUCKET_BASE_S:
        return 0
    return min(N_BUCKETS - 1, int(math.log(seconds / BUCKET_BASE_S) / _LOG_FACTOR))


def quantile(buckets: npt.NDArray[np.float64], q: float) -> float | None:
    """The q-quantile (seconds) of a bucketed distribution, None if it is empty.

    Interpolates geometrically inside the bucket where the cumulative count reaches q.
    """
    total = float(buckets.sum())
    if total <= 0:
        return None
    target = q * total
    cum = np.cumsum(buckets)
    i = int(np.searchsorted(cum, target, side="left"))
    i = min(i, N_BUCKETS - 1)
    before = float(cum[i - 1]) if i else 0.0
    inside = float(buckets[i])
    frac = (target - before) / inside if inside > 0 else 1.0
    return float(BUCKET_BASE_S * BUCKET_FACTOR ** (i + min(max(frac, 0.0), 1.0)))


@dataclass(frozen=True)
class EndpointCounts:
    """One endpoint's totals over all workers; latencies in seconds (None: no requests)."""

    requests: int
    errors: int
    server_errors: int
    client_disconnects: int
    latency_sum_s: float
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None


@dataclass(frozen=True)
class Snapshot:
    """The server's counters summed over every worker file of the run."""

    endpoints: dict[str, EndpointCounts]
    uptime_s: float
    workers_live: int
    workers_started: int


class MetricsStore:
    """This process's counters (written) plus the run's aggregate (read). Thread-safe writes."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.pid = os.getpid()
        size = _WORDS * 8
        if directory is None:
            self._map = mmap.mmap(-1, size)
        else:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / f"worker-{self.pid}.bin", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fresh = os.fstat(fd).st_size != size
                if fresh:
                    os.ftruncate(fd, 0)
                    os.ftruncate(fd, size)
                self._map = mmap.mmap(fd, size)
            finally:
                os.close(fd)
        self._words = memoryview(self._map).cast("d")
        if self._words[0] != _MAGIC or self._words[1] != _LAYOUT:
            for i, value in enumerate((_MAGIC, _LAYOUT, float(self.pid), time.time())):
                self._words[i] = value
        self._lock = threading.Lock()

    # -- writing (this process) -----------------------------------------------------------
    def observe(self, endpoint: int, status: int, seconds: float) -> None:
        """Count one request of ``ENDPOINTS[endpoint]`` with its status and latency.

        ``CLIENT_GONE`` (499): the client went away before the answer; an error (>= 400),
        not a server error, and counted as a client disconnect.
        """
        base = _HEADER + _GLOBALS + endpoint * _ROW
        w = self._words
        with self._lock:
            w[base] += 1.0
            if status >= 400:
                w[base + 1] += 1.0
                if status >= 500:
                    w[base + 2] += 1.0
            w[base + 3] += seconds
            if status == CLIENT_GONE:
                w[base + 4] += 1.0
            w[base + _FIELDS + bucket_of(seconds)] += 1.0

    def close(self) -> None:
        self._words.release()
        self._map.close()

    # -- reading (all processes of the run) -----------------------------------------------
    def _tables(self) -> list[npt.NDArray[np.float64]]:
        if self.directory is None:
            return [np.frombuffer(self._map, dtype=np.float64).copy()]
        tables = []
        for path in sorted(self.directory.glob("worker-*.bin")):
            try:
                data = np.fromfile(path, dtype=np.float64)
            except OSError:
                continue  # removed while we listed: nothing to count
            if data.size == _WORDS and data[0] == _MAGIC and data[1] == _LAYOUT:
                tables.append(data)
        return tables

    def snapshot(self) -> Snapshot:
        """Sum every worker's counters; percentiles from the summed buckets."""
        tables = self._tables() or [np.frombuffer(self._map, dtype=np.float64).copy()]
        total = np.sum(tables, axis=0)
        rows = total[_HEADER + _GLOBALS:].reshape(len(ENDPOINTS), _ROW)
        started = min(float(t[3]) for t in tables)
        return Snapshot(
            endpoints={name: _endpoint_counts(row) for name, row in zip(ENDPOINTS, rows, strict=True)},
            uptime_s=max(0.0, time.time() - started),
            workers_live=sum(int(t[2]) == os.getpid() or pid_alive(int(t[2])) for t in tables),
            workers_started=len(tables),
        )


def _endpoint_counts(row: Sequence[float] | npt.NDArray[np.float64]) -> EndpointCounts:
    buckets = np.asarray(row[_FIELDS:], dtype=np.float64)
    return EndpointCounts(int(row[0]), int(row[1]), int(row[2]), int(row[4]), float(row[3]),
                          quantile(buckets, 0.50), quantile(buckets, 0.95), quantile(buckets, 0.99))


__all__ = ["CLIENT_GONE", "ENDPOINTS", "EndpointCounts", "MetricsStore", "Snapshot", "bucket_of", "quantile"]
