"""benchmarks/format_probe.py: on the sample's index, every posting's tf is recovered so that the
recomputed impact is bit-identical to the stored one, every scoring variant's top-k equals the
kernel's, its timing tables are printed; bad arguments are refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import format_probe
import pytest

QUERIES = ["video game streaming", "Stadia launch price", "we about can", "their over who what", "zzqqxx"]


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None and shutil.which("clang") is None,
                    reason="needs a C compiler")
def test_the_probe_is_exact_on_the_sample_and_prints_its_tables(sample_index: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps(QUERIES))
    # Lists of more than 20 postings are read by blob I/O, so the copy table has rows too.
    rc = format_probe.main(["--index", str(sample_index), "--queries", str(queries), "--rounds", "2",
                            "--inline-postings", "20"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "differs in 0 (numpy) and 0 (C) of them" in out
    assert "4 of 5 queries with sparse terms" in out  # zzqqxx is in no chunk
    assert "the probe's 5 passes: 4/4 queries" in out
    for row in ("blob read today (12 B + block maxima)", "memcpy 6 B/posting (u32 + u16)",
                "accumulate only, f64 impacts (12 B)", "accumulate only, u16 tf + norm (6 B)",
                "probe pass, u16 tf, (D, tf) table (6 B)",
                "accumulate only, u16 quantized, block-coded ids (inexact)"):
        line = next((ln for ln in out.splitlines() if ln.strip().startswith(row)), None)
        assert line is not None and line.split()[-1] == "4", (row, out)  # timed on all 4 queries
    assert "uint16 offsets): " in out and " 0 decoded wrong" in out
    assert out.rstrip().endswith("result: exact (every recomputed impact, decoded rowid and top-k bit-identical)")


def test_a_tf_that_does_not_reproduce_the_impact_is_counted() -> None:
    import numpy as np

    norm = np.array([0.0, 1.1, 0.9, 1.3])
    ids = np.array([1, 2, 3], dtype=np.uint32)
    idf, k1p1 = 2.5, 2.2
    tf = np.array([1.0, 3.0, 7.0])
    impacts = idf * ((tf * k1p1) / (tf + norm[ids]))
    got, bad = format_probe.recover_tf(ids, impacts, idf, norm, k1p1)
    assert got.tolist() == [1, 3, 7] and bad == 0
    impacts[1] = np.nextafter(impacts[1], 1.0)  # one ulp off: no tf gives these bits
    assert format_probe.recover_tf(ids, impacts, idf, norm, k1p1)[1] == 1


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None and shutil.which("clang") is None,
                    reason="needs a C compiler")
def test_a_wrong_tf_makes_the_probe_say_not_exact(sample_index: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    real = format_probe.recover_tf

    def off_by_one(*a: object) -> tuple[object, int]:
        tf, _ = real(*a)  # type: ignore[arg-type]
        return tf + 1, 0  # wrong tfs, claimed exact: the C check and the top-k must catch them

    monkeypatch.setattr(format_probe, "recover_tf", off_by_one)
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps(QUERIES))
    rc = format_probe.main(["--index", str(sample_index), "--queries", str(queries), "--rounds", "1"])
    out = capsys.readouterr().out
    assert rc == 1 and "result: NOT EXACT" in out, out
    assert "differs in 0 (numpy) and 0 (C)" not in out


@pytest.mark.parametrize("argv, message", [
    (["--queries", "{missing}"], "--queries"),
    (["--rounds", "0"], "--block-rows must be >= 1"),
])
def test_bad_arguments_are_one_line_and_exit_2(sample_index: Path, tmp_path: Path, argv: list[str],
                                               message: str, capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps(QUERIES))
    argv = [a.replace("{missing}", str(tmp_path / "nope.json")) for a in argv]
    base = ["--index", str(sample_index), "--queries", str(queries)]
    rc = format_probe.main(base + argv)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_block_coding_keeps_uint32_rowids_where_offsets_do_not_fit() -> None:
    import numpy as np

    block0 = np.arange(1, 129) * 7                          # offsets 0..889 from 7: fit
    block1 = np.concatenate([[200], np.arange(70_000, 70_127)])  # 200 -> 70,126: does not fit
    block2 = np.arange(80_001, 80_010)                      # a last, short block: fits
    ids = np.concatenate([block0, block1, block2]).astype(np.uint32)
    base, off, fit = format_probe.block_code(ids)
    assert base.tolist() == [7, 200, 80_001] and fit.tolist() == [1, 0, 1]
    assert off[:128].tolist() == (block0 - 7).tolist()
    assert not off[128:256].any()  # a block that does not fit keeps its uint32 rowids instead
    assert off[256:].tolist() == list(range(9))
