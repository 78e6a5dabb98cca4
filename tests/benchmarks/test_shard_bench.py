"""``shard_bench.py`` end to end on a tiny corpus: it serves both sides, finds the broker's
answers byte-identical and reports every figure docs/SCALING.md quotes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import shard_bench


@pytest.mark.slow
def test_shard_bench_reports_both_sides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = shard_bench.main(["--docs", "40", "--shards", "2", "--queries", "20", "--clients", "2",
                           "--duration", "0.5", "--cache", str(tmp_path)])
    got = json.loads(capsys.readouterr().out)
    assert rc == 0 and got["answers_differing"] == 0 and got["queries"] == 20
    for side in ("whole", "sharded"):
        assert got[side]["req_per_s"] > 0 and got[side]["p50_ms"] <= got[side]["p99_ms"]
        assert got[side]["file_bytes_per_chunk"] > 0
    assert len(got["engine_us_per_query"]["shards"]) == 2 and len(got["load_before"]) == 3
    assert len(got["whole"]["cpu_ms_per_request"]) == 1 and len(got["sharded"]["cpu_ms_per_request"]) == 3
