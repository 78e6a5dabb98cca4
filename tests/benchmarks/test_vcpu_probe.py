"""``vcpu_probe.py``: a cache line's round trip between two pinned threads, sampled; bad
arguments are refused in one line."""

from __future__ import annotations

import os
import re
import shutil

import pytest
import vcpu_probe

HAVE_CC = any(shutil.which(c) for c in ("cc", "gcc", "clang"))
CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


@pytest.mark.skipif(not HAVE_CC or len(CPUS) < 2, reason="needs a C compiler and two CPUs")
def test_the_probe_prints_each_sample_and_their_spread(capsys: pytest.CaptureFixture[str]) -> None:
    rc = vcpu_probe.main(["--samples", "2", "--gap", "0", "--trips", "20000", "--cpus", f"{CPUS[0]},{CPUS[1]}"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert sorted(os.sched_getaffinity(0)) == CPUS  # the probe pins threads of its own, never the caller
    samples = [float(x) for x in re.findall(r"sample \d: +([0-9.]+) ns a round trip", out)]
    assert len(samples) == 2 and all(0 < x < 1e6 for x in samples)
    assert re.search(r"2 samples: min [0-9.]+, median [0-9.]+, max [0-9.]+ ns; [0-2] of them over twice", out)


@pytest.mark.parametrize("argv", [["--cpus", "0"], ["--cpus", "0,0"], ["--cpus", "0,99999"], ["--cpus", "a,b"],
                                  ["--samples", "0"], ["--trips", "0"], ["--gap", "-1"]])
def test_bad_arguments_are_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert vcpu_probe.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("vcpu_probe: ") and len(err.strip().splitlines()) == 1
