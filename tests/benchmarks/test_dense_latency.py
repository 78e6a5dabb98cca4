"""benchmarks/dense_latency.py runs end to end on a small synthetic matrix."""

from __future__ import annotations

import re
import subprocess
import sys

from ..helpers import REPO


def test_dense_latency_reports_percentiles() -> None:
    run = subprocess.run([sys.executable, str(REPO / "benchmarks/dense_latency.py"), "--chunks", "2000",
                          "--queries", "3"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert re.match(r"chunks 2000, dimension 384, k 10, queries 3, path (avx2|sse2|numpy): p50 ", run.stdout), \
        run.stdout
    assert "MiB" in run.stdout
