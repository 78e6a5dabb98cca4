"""kill -9 of a real `build` / `corpus build` leaves scratch files; the next build clears
what is provably a dead build's, and never a live build's."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRATCH_PREFIX = "drsearch-build-"  # as drsearch.index.leftovers names it
EXE = str(Path(sys.executable).with_name("drsearch"))
WORDS = [f"w{i}" for i in range(5000)]


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough documents that a build runs for a few seconds (a kill lands mid-build)."""
    rng = random.Random(7)
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    with path.open("w") as fh:
        for i in range(5000):
            text = " ".join(rng.choices(WORDS, k=400))
            fh.write(json.dumps({"docid": f"d{i:06d}", "url": f"https://example.org/{i}", "title": f"t {i}",
                                 "text": text}) + "\n")
    return path


def leftovers(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir()
                  if p.name.startswith(SCRATCH_PREFIX) or p.name.startswith(f".{name}.tmp-"))


def start_and_kill(cmd: list[str], parent: Path, name: str) -> list[str]:
    """Start ``cmd``, wait until its scratch directory and temporary output exist, kill -9 it."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            names = leftovers(parent, name)
            if any(n.startswith(SCRATCH_PREFIX) for n in names) and any(n.startswith(".") for n in names):
                time.sleep(0.3)  # well inside the build
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the build ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return leftovers(parent, name)


@pytest.mark.parametrize("verb", [["build"], ["corpus", "build"]])
def test_a_rerun_clears_what_a_killed_build_left(docs: Path, tmp_path: Path, verb: list[str]) -> None:
    out = tmp_path / "corpus.sqlite3"
    cmd = [EXE, *verb, str(docs), "--out", str(out), "--quiet"]
    left = start_and_kill(cmd, tmp_path, out.name)
    assert any(n.startswith(SCRATCH_PREFIX) for n in left) and any(n.startswith(f".{out.name}.tmp-") for n in left)
    stranger = tmp_path / f"{SCRATCH_PREFIX}not-ours"  # no lock file: not provably a dead build's
    stranger.mkdir()
    # The rerun builds the same output from a few documents: what it clears is found by the
    # output's name and the scratch's lock, not by the input (the big input is only there so
    # that the kill lands mid-build), and a full rebuild would double the test's time.
    small = tmp_path / "small.jsonl"
    small.write_text("".join(docs.read_text().splitlines(keepends=True)[:20]))
    done = subprocess.run([EXE, *verb, str(small), "--out", str(out), "--quiet"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert leftovers(tmp_path, out.name) == [stranger.name]
    assert out.is_file()


def test_a_live_builds_scratch_is_left_alone(docs: Path, tmp_path: Path) -> None:
    from drsearch.index.leftovers import dead_leftovers

    slow = subprocess.Popen([EXE, "build", str(docs), "--out", str(tmp_path / "a.sqlite3"), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not leftovers(tmp_path, "a.sqlite3") and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        live = leftovers(tmp_path, "a.sqlite3")
        assert live and dead_leftovers(tmp_path / "a.sqlite3") == []
        assert dead_leftovers(tmp_path / "b.sqlite3") == []  # another output, same directory
    finally:
        _, err = slow.communicate(timeout=600)
    assert slow.returncode == 0, err
    assert leftovers(tmp_path, "a.sqlite3") == []
