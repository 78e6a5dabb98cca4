"""The HTTP-path benchmark (benchmarks/http_bench.py) in a short run: it starts a server, checks
its answers against the engine's, measures the engine alone and both endpoints, and prints every
ratio with the load averages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import REPO

pytestmark = pytest.mark.slow


def test_http_bench_short_run(sample_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, str(REPO / "benchmarks/http_bench.py"), "--database", str(sample_index),
                        "--seconds", "0.5", "--rounds", "1", "--clients", "4", "--batch", "16",
                        "--queries", "20", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rep = json.loads(out.read_text())
    s = rep["summary"]
    for key in ("engine_k10", "search", "engine_batch", "retrieve", "search_ratio", "retrieve_ratio",
                "search_cpu_ratio", "retrieve_cpu_ratio", "search_p50_ms", "search_p99_ms"):
        assert s[key] > 0, key
    assert len(rep["load_start"]) == 3 and len(rep["rounds"]) == 1
    assert "/search / engine" in p.stdout and "/retrieve / engine" in p.stdout
    assert "load averages at start" in p.stdout
