"""benchmarks/memory_probe.py and benchmarks/cold_probe.py on the sample's index: each prints
its breakdown (the groups and the engine's buffers; every stage of a fresh process's first
answer) and its verdict; a missing index is refused."""

from __future__ import annotations

import json
from pathlib import Path

import cold_probe
import memory_probe
import pytest


def test_memory_probe_breaks_a_process_down(sample_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("drsearch.index._kernels")
    rc = memory_probe.main([str(sample_index), "--procs", "1", "--queries", "20", "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    for group in memory_probe.GROUPS:
        assert any(line.startswith(group) for line in out.splitlines()), group
    assert "the process's own memory (anonymous)" in out and "PASS" in out
    assert "thread.arena" in out and "thread.scratch.out_chunks" in out and "scorer._chunk_len" in out
    report = json.loads(out.strip().splitlines()[-1])
    assert report["queries"] == 20 and len(report["anonymous_bytes"]) == 1
    buffers = report["buffers"]
    assert all(0 <= resident <= size + 2 * 4096 for size, resident in buffers.values())  # whole pages


def test_cold_probe_times_every_stage(sample_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cold_probe.main([str(sample_index), "--runs", "1", "--queries", "20", "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    report = json.loads(out.strip().splitlines()[-1])
    stages = report["stages"]
    for stage in ("import", "open: arrays", "open: scorer", "open: rest", "search: parse",
                  "search: postings", "search: rank", "search: rest"):
        assert stage in stages and stages[stage]["ms"] >= 0, stage
    # ("search: texts" only where they are read after the ranking: without the kernel, or
    # a query the kernel does not rank with its texts, e.g. of one short list)
    assert report["wall_ms"] >= report["child_ms"] > 0


def test_cold_probe_times_drsearch_search(sample_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cold_probe.main([str(sample_index), "--cli", "--runs", "2", "--queries", "20", "--warm", "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    report = json.loads(out.strip().splitlines()[-1])
    assert report["cli"] and report["runs"] == 2 and len(report["walls_ms"]) == 2
    assert report["wall_ms"] > report["import_ms"] > 0 and report["command_ms"] > 0
    assert report["costly"] == ["numpy"]  # the engine's arrays; no web stack, no pydantic
    assert "first answer (parent wall)" in out


def test_a_missing_index_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for probe in (memory_probe, cold_probe):
        with pytest.raises(SystemExit) as exc:
            probe.main([str(tmp_path / "none.sqlite3")])
        assert exc.value.code == 2
        assert "no such index file" in capsys.readouterr().err
