"""Two `drsearch run` on one --out: the second is refused (exit 2, naming the first's pid);
after a kill -9 of the first, a third resumes and finishes (no stale lock)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from drsearch.dev.chat import serve_fake

from .conftest import BLOCKED, QUESTIONS


def test_one_writer_per_run_directory(sample_index: Path, tmp_path: Path) -> None:
    exe = str(Path(sys.executable).with_name("drsearch"))
    out = tmp_path / "run"
    with serve_fake({}, delay_s=0.5) as fake:  # slow: the first run is still going when the second starts
        cmd = [exe, "run", "--questions", str(QUESTIONS), "--database", str(sample_index),
               "--blocked-docids", str(BLOCKED), "--model", "fake-model", "--base-url", fake.url,
               "--out", str(out), "--quiet", "--max-attempts", "2", "--backoff", "0.01"]
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while not (out / "run.json").exists() and first.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            assert first.poll() is None, "the first run ended before the second started"
            second = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            assert second.returncode == 2, second.stderr
            assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
            assert f"another drsearch process (pid {first.pid}) is writing this run directory" in second.stderr
            os.kill(first.pid, signal.SIGKILL)
            first.wait(10)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait(10)
        fake.delay_s = 0.0
        third = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert (out / "trajectories.jsonl").read_bytes().count(b"\n") == 12
