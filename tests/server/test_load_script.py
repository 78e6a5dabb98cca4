"""The load script (benchmarks/load_test.py) in its short CI version: it runs, and it kills a worker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import REPO

pytestmark = pytest.mark.slow


def test_load_script_short_run_with_a_worker_killed(sample_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    p = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/load_test.py"), "--database", str(sample_index),
         "--agents", "16", "--duration", "4", "--inprocess-seconds", "0.5", "--kill-worker",
         "--kill-at", "0.25", "--json", str(out)],
        capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(out.read_text())
    http = rep["http"]
    assert http["requests"] > 50 and http["errors"]["http_4xx_5xx"] == 0
    assert http["determinism"]["byte_mismatches"] == 0
    kill = http["kill_worker"]
    assert kill["pid"] > 0 and "replacement_pid" in kill, kill  # uvicorn replaced the worker
    assert kill["failed_after_kill"] <= 16  # at most the requests in flight on its connections
    assert rep["inprocess"]["ops_per_s"] > 0 and rep["ratio"] > 0
    assert len(rep["memory"]) == 2 and all(m["rss_mib"] > 0 for m in rep["memory"])
    assert "HTTP / in-process throughput ratio" in p.stdout
