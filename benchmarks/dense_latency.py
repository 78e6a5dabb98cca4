"""Latency of the dense retriever's exact ranking at the benchmark corpus' scale.

Times ``DenseRetriever``'s ranking step (the float32 pass over every chunk's int8 vector and
the best chunk per document, ``best_per_document``) on synthetic vectors: ``--chunks``
(default 243,615, the benchmark corpus) unit vectors of 384 dimensions, quantised as
``drsearch embed`` stores them, ~5 chunks a document. The query's own embedding (one
onnxruntime run) is not included. Run with ``OMP_NUM_THREADS=1`` for one core.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/dense_latency.py [--chunks N] [--queries Q] [--k K]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.append(str(REPO / "src"))

from drsearch.dense.retriever import best_per_document  # noqa: E402
from drsearch.dense.sidecar import quantise  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--chunks", type=int, default=243_615)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(44)
    n, d = args.chunks, 384
    matrix = np.zeros((n + 1, d), dtype=np.float32)
    scales = np.zeros(n + 1, dtype=np.float64)
    for lo in range(0, n, 65536):  # quantised in blocks, as embed writes them
        v = rng.standard_normal((min(65536, n - lo), d)).astype(np.float32)
        rec = quantise(v / np.linalg.norm(v, axis=1, keepdims=True))
        matrix[lo + 1:lo + 1 + len(rec)] = rec["v"]
        scales[lo + 1:lo + 1 + len(rec)] = rec["s"]
    chunk_doc = np.concatenate([[0], np.sort(rng.integers(1, n // 5 + 2, n))]).astype(np.int32)
    hidden = np.zeros(n + 1, dtype=np.bool_)
    hidden[0] = True
    times = []
    for _ in range(args.queries):
        q = rng.standard_normal((1, d)).astype(np.float32)
        rec = quantise(q / np.linalg.norm(q))[0]
        t = time.perf_counter()
        scores = (matrix @ rec["v"].astype(np.float32)).astype(np.float64) * scales * float(rec["s"])
        scores[hidden] = -np.inf
        best_per_document(scores, chunk_doc, args.k)
        times.append(time.perf_counter() - t)
    ms = np.array(times) * 1000
    print(f"chunks {n}, dimension {d}, k {args.k}, queries {args.queries}: "
          f"p50 {np.percentile(ms, 50):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms; "
          f"vectors in memory {matrix.nbytes / 2**20:.0f} MiB (float32)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
