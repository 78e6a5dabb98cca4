"""The background deep check of `drsearch serve` runs at the lowest CPU priority (nice 19)."""

from __future__ import annotations

import os
import subprocess
import sys

# deepcheck.main with its check replaced by a report of the priority it runs at
_PROBE = """
import os, drsearch.server.deepcheck as d
d.run = lambda database, run_dir: print(os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0)) or True
raise SystemExit(d.main(["corpus.sqlite3", "run-dir"]))
"""


def test_the_deep_check_runs_at_nice_19_in_the_normal_class() -> None:
    # not SCHED_IDLE: on cores that never idle it would never finish (/health: pending forever)
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    nice, policy = map(int, done.stdout.split())
    assert nice == 19
    assert policy == os.SCHED_OTHER
