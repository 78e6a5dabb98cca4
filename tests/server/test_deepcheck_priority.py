"""The background deep check of `drsearch serve` runs only on CPU time the workers leave idle."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# deepcheck.main with its check replaced by a report of the priority it runs at
_PROBE = """
import os, drsearch.server.deepcheck as d
d.run = lambda database, run_dir: print(os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0)) or True
raise SystemExit(d.main(["corpus.sqlite3", "run-dir"]))
"""


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="no SCHED_IDLE scheduling class on this system")
def test_the_deep_check_runs_in_the_idle_class_at_nice_19() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    policy, nice = map(int, done.stdout.split())
    assert policy == os.SCHED_IDLE
    assert nice == 19
