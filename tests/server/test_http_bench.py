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


def test_http_bench_baseline_and_floor(sample_index: Path, tmp_path: Path) -> None:
    """--baseline measures a second tree's server (here this one's src) and --floor the bare
    stack in the same rounds; the report splits a request's CPU between them."""
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, str(REPO / "benchmarks/http_bench.py"), "--database", str(sample_index),
                        "--seconds", "0.5", "--rounds", "1", "--clients", "4", "--batch", "16",
                        "--queries", "20", "--baseline", str(REPO / "src"), "--floor", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    s = json.loads(out.read_text())["summary"]
    for key in ("search_base", "retrieve_base", "search_base_cpu_ratio", "retrieve_base_cpu_ratio", "floor",
                "floor_cpu_ms", "search_cpu_ms", "engine_k10_cpu_ms"):
        assert s[key] > 0, key
    assert "baseline " in p.stdout and "the bare stack" in p.stdout


def test_http_bench_refuses_a_baseline_without_drsearch(sample_index: Path, tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, str(REPO / "benchmarks/http_bench.py"), "--database", str(sample_index),
                        "--baseline", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "not a src directory" in p.stderr and "Traceback" not in p.stderr
