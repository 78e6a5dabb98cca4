"""The /retrieve benchmark (benchmarks/retrieve_bench.py) in a short run: it starts a server,
measures every batch size and serial /search, and reports the ratios."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import REPO

pytestmark = pytest.mark.slow


def test_retrieve_bench_short_run(sample_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    p = subprocess.run([sys.executable, str(REPO / "benchmarks/retrieve_bench.py"), "--database", str(sample_index),
                        "--seconds", "0.6", "--rounds", "2", "--json", str(out)], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rep = json.loads(out.read_text())
    assert rep["serial_search"]["qps"] > 0 and set(rep["retrieve"]) == {"1", "16", "256"}
    for batch, m in rep["retrieve"].items():
        assert m["queries"] == m["requests"] * int(batch) > 0 and m["ratio_to_serial_search"] > 0
    assert "x serial /search" in p.stderr
