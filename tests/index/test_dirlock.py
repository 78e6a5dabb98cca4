"""One writer per output directory (drsearch.contract.dirlock): real processes, real kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from drsearch.contract import DirectoryBusyError
from drsearch.contract.dirlock import LOCK_NAME, entries, holder_pid, is_locked, lock_dir

HOLD = ("import sys, time\n"
        "from drsearch.contract.dirlock import lock_dir\n"
        "lock_dir(sys.argv[1], 'test directory')\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n")


@contextmanager
def holder(directory: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock on ``directory`` until the block ends (kill -9)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_a_second_process_is_refused_naming_the_holder_and_kill_9_frees_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with holder(out) as proc:
        assert is_locked(out)
        stamp = (out / LOCK_NAME).stat().st_mtime_ns
        with pytest.raises(DirectoryBusyError, match=rf"{out}: another drsearch process \(pid {proc.pid}\)"):
            lock_dir(out, "test directory")
        assert (out / LOCK_NAME).stat().st_mtime_ns == stamp  # a refused writer touches nothing
        os.kill(proc.pid, signal.SIGKILL)  # no cleanup runs: the kernel drops the lock
        proc.wait(10)
    assert not is_locked(out)
    with lock_dir(out, "test directory"):  # a new writer proceeds: no stale lock
        assert is_locked(out)
        assert holder_pid(out / LOCK_NAME) == os.getpid()
        assert (out / LOCK_NAME).read_bytes() == b""  # nothing in it: outputs stay byte-identical
    assert not is_locked(out)


def test_reentrant_in_one_process_and_invisible_to_listings(tmp_path: Path) -> None:
    with lock_dir(tmp_path / "d") as outer, lock_dir(tmp_path / "d"):
        assert outer.directory == (tmp_path / "d").resolve()
    assert entries(tmp_path / "d") == []  # the lock file does not make a directory non-empty
    assert not is_locked(tmp_path / "d")


def test_the_pipeline_and_pool_writers_are_refused(tmp_path: Path) -> None:
    """generate / construct stages (run_pipeline) and a pool (run_stage) on a held directory."""
    from drsearch.benchmark.generate import GenerateSettings, Pipeline, Stage, run_pipeline
    from drsearch.release.construct.work import run_stage

    def write(ctx: object) -> None:
        raise AssertionError("must not run")

    pipeline = Pipeline("g", [Stage("s", write, inputs=(), outputs=("x.txt",), settings={})])
    with holder(tmp_path / "gen") as proc, pytest.raises(DirectoryBusyError, match=f"pid {proc.pid}"):
        run_pipeline(pipeline, GenerateSettings(out=tmp_path / "gen", cache_mode="off"))
    with holder(tmp_path / "pool") as proc, pytest.raises(DirectoryBusyError, match=f"pid {proc.pid}"):
        run_stage(tmp_path / "pool", "consolidate", write, inputs=(), outputs=("x.txt",), settings={})
    with holder(tmp_path / "pool" / "consolidate") as proc, \
            pytest.raises(DirectoryBusyError, match=f"pid {proc.pid}"):
        run_stage(tmp_path / "pool", "consolidate", write, inputs=(), outputs=("x.txt",), settings={})


def test_release_verbs_are_refused_on_a_held_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from drsearch.tools.cli import main

    from ..helpers import DATA

    rel = tmp_path / "rel"
    args = ["release", "assemble", "--out", str(rel), "--docs", str(DATA / "sample/docs.jsonl"),
            "--questions", str(DATA / "sample/questions.jsonl"),
            "--blocked-docids", str(DATA / "sample/blocked_docids.txt"), "--name", "t", "--revision", "1",
            "--quiet"]
    with holder(rel) as proc:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"pid {proc.pid}" in err
        assert [p.name for p in rel.iterdir()] == [LOCK_NAME]  # nothing written
    assert main(args) == 0  # the holder is gone: the release is assembled (its lock file is no release file)
    capsys.readouterr()
    assert LOCK_NAME not in (rel / "checksums.sha256").read_text()
    with holder(rel) as proc:
        assert main(["release", "manifest", str(rel), "--quiet"]) == 2
        assert f"pid {proc.pid}" in capsys.readouterr().err
    assert main(["validate", "--release-dir", str(rel)]) == 0


def test_no_wait_for_a_lock_a_dead_holder_left(tmp_path: Path) -> None:
    """kill -9 while holding, then many takers in turn: each gets it at once."""
    out = tmp_path / "o"
    with holder(out) as proc:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    t0 = time.monotonic()
    for _ in range(20):
        lock_dir(out).release()
    assert time.monotonic() - t0 < 5


def test_a_crawl_directory_has_one_fetcher(tmp_path: Path) -> None:
    from drsearch.corpus import fetch_urls

    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.org/a\n")
    with holder(tmp_path / "crawl") as proc, pytest.raises(DirectoryBusyError, match=f"pid {proc.pid}"):
        fetch_urls(urls, tmp_path / "crawl")
    assert [p.name for p in (tmp_path / "crawl").iterdir()] == [LOCK_NAME]  # nothing fetched, nothing written
