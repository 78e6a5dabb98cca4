"""benchmarks/kernel_ab.py on the sample's index, read through --index/--query-file: two score
buffer sizes (a tiny one: many windows) give the same answers, every entry point and the
engine's c-auto choice get a row and an after/before ratio; bad arguments exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import kernel_ab
import pytest

QUERIES = ["video game streaming", "Stadia launch price", "we about can", "their over who what"]


def _kernel_path() -> Path:
    kernels = pytest.importorskip("drsearch.index._kernels")
    return Path(kernels.__file__)


def test_two_buffer_sizes_agree_and_every_entry_point_is_timed(sample_index: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    so = _kernel_path()
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps(QUERIES))
    rc = kernel_ab.main(["--before", str(so), "--after", str(so), "--index", str(sample_index),
                         "--query-file", str(queries), "--rounds", "1", "--after-rows", "64"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"{len(QUERIES)} queries" in out and f"before {kernel_ab.BLOCK_ROWS:,}, after 64 rowids" in out
    for k in (10, 100):
        assert f"k={k}, queries:" in out and f"k={k}, each query's rarest term alone:" in out
    for entry in ("rank_blocks", "rank_maxscore", "rank_maxscore+block_max", "c-auto"):
        timed = [ln for ln in out.splitlines() if ln.split()[:2] in (["before", entry], ["after", entry])]
        ratios = [ln for ln in out.splitlines() if ln.split()[:1] == [entry]]
        assert len(timed) == 8 and len(ratios) == 4, (entry, out)  # 2 k x 2 query sets
        assert all(float(x) > 0 for ln in ratios for x in ln.split()[1:]), out


def test_the_c_auto_row_follows_the_scorer_rule() -> None:
    import numpy as np

    one = [(np.arange(1, 11, dtype=np.uint32), np.ones(10), 1.0, np.empty(0))]
    big = kernel_ab.PRUNE_ALL_ROWS
    assert kernel_ab.auto_prunes(one, kernel_ab.PRUNE_ALL_K, big)  # a large corpus, small k
    assert kernel_ab.auto_prunes(one, 100, 41)  # 4 * 10 postings < 41 chunks
    assert not kernel_ab.auto_prunes(one, 100, 40)


@pytest.mark.parametrize("args, message", [
    (["--index", "x.sqlite3"], "--index and --query-file go together"),
    (["--after-rows", "10"], "must be at least 64"),
])
def test_bad_arguments_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        kernel_ab.main(["--before", "a.so", "--after", "b.so", *args])
    assert e.value.code == 2 and message in capsys.readouterr().err
