"""The benchmark scripts are not a package: they import each other by name (``import
corpus_gen``), so their directory goes on sys.path (spawned serving processes inherit it)."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
