"""Latency of the dense retriever's exact ranking at the benchmark corpus' scale.

Times ``DenseRetriever``'s ranking step — every chunk's exact int8 inner product with the
query (``drsearch.index.dense_scan.dense_scores``: the C kernel's SIMD loop, AVX2 where the
CPU has it; ``--path baseline`` its SSE2 copy, ``--path numpy`` its numpy twin) and the best
chunk per document (``best_per_document``) — on synthetic vectors: ``--chunks`` (default
243,615, the benchmark corpus) unit vectors of 384 dimensions, quantised as ``drsearch
embed`` stores them, ~5 chunks a document. The query's own embedding (one onnxruntime run)
is not included. One thread (the kernel's loop is
single-threaded; run with ``OMP_NUM_THREADS=1`` so numpy's BLAS is too). Prints the path
taken, p50/p99 of the wall time and p50 of the thread's CPU time (on a shared machine the wall
time includes waiting for a core; the CPU time is the work), the vectors' memory and the load
average before and after.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/dense_latency.py [--chunks N] [--queries Q] [--k K]
        [--path auto|baseline|numpy]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.append(str(REPO / "src"))

from drsearch.dense.retriever import best_per_document  # noqa: E402
from drsearch.dense.sidecar import quantise  # noqa: E402
from drsearch.index import native  # noqa: E402
from drsearch.index.dense_scan import dense_path, dense_scores  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--chunks", type=int, default=243_615)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--path", choices=("auto", "baseline", "numpy"), default="auto",
                    help="the kernel's loop for this CPU (auto), its SSE2 copy, or the numpy twin")
    args = ap.parse_args()
    load_before = os.getloadavg()
    rng = np.random.default_rng(44)
    n, d = args.chunks, 384
    matrix = np.zeros((n + 1, d), dtype=np.int8)
    scales = np.zeros(n + 1, dtype=np.float64)
    for lo in range(0, n, 65536):  # quantised in blocks, as embed writes them
        v = rng.standard_normal((min(65536, n - lo), d)).astype(np.float32)
        rec = quantise(v / np.linalg.norm(v, axis=1, keepdims=True))
        matrix[lo + 1:lo + 1 + len(rec)] = rec["v"]
        scales[lo + 1:lo + 1 + len(rec)] = rec["s"]
    chunk_doc = np.concatenate([[0], np.sort(rng.integers(1, n // 5 + 2, n))]).astype(np.int32)
    hidden = np.zeros(n + 1, dtype=np.bool_)
    hidden[0] = True
    out = np.empty(n + 1, dtype=np.float64)
    times, cpu = [], []
    for _ in range(args.queries):
        q = rng.standard_normal((1, d)).astype(np.float32)
        rec = quantise(q / np.linalg.norm(q))[0]
        qv = np.ascontiguousarray(rec["v"], dtype=np.int8)
        t, c = time.perf_counter(), time.thread_time()
        if args.path == "baseline":
            native.dense_scores(matrix, qv, scales, float(rec["s"]), hidden, out, baseline=True)
        else:
            dense_scores(matrix, qv, scales, float(rec["s"]), hidden, out, native=args.path == "auto")
        best_per_document(out, chunk_doc, args.k)
        times.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    ms = np.array(times) * 1000
    load_after = os.getloadavg()
    path = dense_path() if args.path == "auto" else args.path
    print(f"chunks {n}, dimension {d}, k {args.k}, queries {args.queries}, path {path}: "
          f"p50 {np.percentile(ms, 50):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms, "
          f"CPU p50 {np.percentile(np.array(cpu) * 1000, 50):.1f} ms; "
          f"vectors in memory {matrix.nbytes / 2**20:.0f} MiB (int8) + {2 * scales.nbytes / 2**20:.0f} MiB "
          f"(scales, scores); load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
