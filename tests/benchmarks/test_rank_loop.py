"""benchmarks/rank_loop.py (the loop docs/BENCHMARKS.md's perf profile samples): it runs the
queries for the time asked and counts them; a bad queries file is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import rank_loop


def test_the_loop_runs_whole_passes_of_the_queries(sample_index: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps(["solar energy", "history of the internet", "zzzqqq"]))
    assert rank_loop.main(["--index", str(sample_index), "--queries", str(queries), "--seconds", "0.2"]) == 0
    out = capsys.readouterr().out
    n = int(out.split()[0])
    assert n >= 3 and n % 3 == 0 and "searches (k=10)" in out, out


@pytest.mark.parametrize("content", ["{}", "[]", "[1, 2]", "not json"])
def test_a_bad_queries_file_is_one_line_and_exit_2(sample_index: Path, tmp_path: Path, content: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.json"
    queries.write_text(content)
    assert rank_loop.main(["--index", str(sample_index), "--queries", str(queries)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rank_loop.py: "), err
