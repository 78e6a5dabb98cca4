"""``drsearch serve``'s per-run counter directories: removed on a graceful stop by the server
itself, and after a SIGKILL (which no process can clean up after) by the next server."""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path

import pytest

from drsearch.server import ServeProcess
from drsearch.server.runner import OWNER_LOCK, RUN_DIR_PREFIX, sweep_run_dirs

pytestmark = pytest.mark.slow


def run_dir(parent: Path, name: str, lock: bool = True) -> Path:
    d = parent / name
    d.mkdir()
    (d / "worker-1.bin").write_bytes(b"\0" * 64)
    if lock:
        (d / OWNER_LOCK).touch()
    return d


def test_sweep_removes_only_the_run_directories_nobody_holds(tmp_path: Path) -> None:
    dead = run_dir(tmp_path, RUN_DIR_PREFIX + "dead")
    alive = run_dir(tmp_path, RUN_DIR_PREFIX + "alive")
    legacy = run_dir(tmp_path, RUN_DIR_PREFIX + "legacy", lock=False)  # an older drsearch's, or being made
    other = run_dir(tmp_path, "something-else")
    fd = os.open(alive / OWNER_LOCK, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # its server: flock conflicts across open files, even ours
        assert sweep_run_dirs(tmp_path) == [dead]
    finally:
        os.close(fd)
    assert not dead.exists() and alive.is_dir() and legacy.is_dir() and other.is_dir()
    assert sweep_run_dirs(tmp_path) == [alive]  # its lock is gone: so is its server


def test_the_next_server_removes_the_run_directory_of_a_killed_one(sample_index: Path, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    first = ServeProcess(sample_index, "--verify", "none", env=env, log=tmp_path / "first.log").start()
    (killed,) = tmp.glob(RUN_DIR_PREFIX + "*")
    assert (killed / OWNER_LOCK).is_file()
    assert first.kill() == -signal.SIGKILL
    assert killed.is_dir()  # nobody could remove it
    with ServeProcess(sample_index, "--verify", "none", env=env, log=tmp_path / "second.log") as second:
        assert not killed.exists()
        (own,) = tmp.glob(RUN_DIR_PREFIX + "*")
        assert f"removed 1 run directories of servers that were killed: {killed}" in \
            (tmp_path / "second.log").read_text()
    assert second.proc.returncode == 0 and not own.exists()  # a graceful stop removes its own
