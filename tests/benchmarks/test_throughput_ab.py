"""``throughput_ab.py``: two trees' throughput, interleaved, and (one tree twice) the A/B of the
kernel's poll for the GIL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import throughput_ab

from drsearch.index.native import native_kernels

from ..helpers import REPO

# every run must rank with the C kernel (throughput_ab refuses numpy)
pytestmark = pytest.mark.skipif(native_kernels() is None, reason="C kernel not built")


def _queries(tmp_path: Path) -> Path:
    path = tmp_path / "queries.json"
    path.write_text(json.dumps(["climate change", "football transfer", "election results", "new phone"]))
    return path


def test_an_ab_of_the_gil_poll_runs_every_mode_on_both_sides(sample_index: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ab.json"
    rc = throughput_ab.main(["--before", str(REPO), "--after", str(REPO), "--before-gil-poll-ns", "0",
                             "--index", str(sample_index), "--queries", str(_queries(tmp_path)),
                             "--rounds", "1", "--seconds", "0.3", "--json", str(out)])
    assert rc == 0
    got = json.loads(out.read_text())
    assert got["gil_poll_ns"] == {"before": 0, "after": None}
    for tree in ("before", "after"):
        runs = got["runs"][tree]
        assert set(runs) == {"1 thread", "2 threads", "2 procs"}
        assert all(len(r) == 1 and r[0]["qps"] > 0 and r[0]["scorer"].startswith("c") for r in runs.values())
    printed = capsys.readouterr().out
    assert "after / before, median:" in printed and "GIL held" in printed


@pytest.mark.parametrize("extra", [["--before-gil-poll-ns", "-1"], ["--rounds", "0"], ["--threads", "1"]])
def test_bad_options_are_exit_2(sample_index: Path, tmp_path: Path, extra: list[str],
                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = throughput_ab.main(["--before", str(REPO), "--index", str(sample_index),
                             "--queries", str(_queries(tmp_path)), *extra])
    assert rc == 2 and "throughput_ab:" in capsys.readouterr().err
