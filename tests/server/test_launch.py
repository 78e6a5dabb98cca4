"""drsearch.server.launch: a real ``drsearch serve`` child started, waited for and stopped,
and the ways it can fail to come up or to stop (a stand-in that misbehaves: fake_serve.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import pytest

from drsearch.server import ServeError, ServeProcess, free_port
from drsearch.server import launch as launch_module

pytestmark = pytest.mark.slow

FAKE = (sys.executable, str(Path(__file__).with_name("fake_serve.py")))


def get_json(url: str) -> dict[str, object]:
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=10) as r:
        body: dict[str, object] = json.loads(r.read())
        return body


@pytest.fixture()
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process's temporary directory for the test: what the helper leaves there shows."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_start_answers_and_stop_removes_the_servers_temporary_directory(sample_index: Path, own_tmp: Path,
                                                                        tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    with ServeProcess(sample_index, "--verify", "none", log=log) as server:
        assert get_json(server.url + "/health")["status"] == "ok"
        # `drsearch serve`'s own per-run counter directory lands in the helper's TMPDIR
        assert [p.name[:15] for p in server.tmp_dir.iterdir()] == ["drsearch-serve-"]
        tmp_dir, port = server.tmp_dir, server.port
    assert server.proc.returncode == 0
    assert not tmp_dir.exists() and list(own_tmp.iterdir()) == []
    assert "serving" in log.read_text()  # the log given is kept
    with socket.socket() as s:  # nothing listens there any more (TIME_WAIT aside, as servers bind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))


def test_a_killed_server_leaves_no_temporary_directory(sample_index: Path, own_tmp: Path) -> None:
    """SIGKILL: `drsearch serve` cannot remove its counter directory itself; the helper does."""
    server = ServeProcess(sample_index, "--verify", "none").start()
    run_dirs = list(server.tmp_dir.glob("drsearch-serve-*"))
    assert len(run_dirs) == 1 and run_dirs[0].is_dir()
    assert server.kill() == -signal.SIGKILL
    assert not run_dirs[0].exists() and list(own_tmp.iterdir()) == []
    assert server.stop() == -signal.SIGKILL  # stopping again is harmless


def test_with_workers_start_returns_once_every_worker_is_live(sample_index: Path) -> None:
    with ServeProcess(sample_index, "--verify", "none", workers=2) as server:
        workers = get_json(server.url + "/stats")["server"]
        assert isinstance(workers, dict) and workers["workers"]["live"] == 2


def test_a_server_that_exits_at_start_is_a_serve_error_with_its_log(tmp_path: Path, own_tmp: Path) -> None:
    """The server exits at once (not a database): the ServeError naming why reaches the caller;
    stopping the already-exited server must not replace it (killpg on a dead group raises)."""
    bad = tmp_path / "x.sqlite3"
    bad.write_bytes(b"not a database")
    with pytest.raises(ServeError, match=r"exited 2 before answering: .*not a drsearch index"), \
            ServeProcess(bad, log=tmp_path / "log"):
        pass
    assert list(own_tmp.iterdir()) == []


def test_a_busy_given_port_is_a_serve_error(sample_index: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(ServeError, match=rf"127.0.0.1:{port}: exited 2 .*cannot bind"):
            ServeProcess(sample_index, "--verify", "none", port=port).start()


def test_a_free_port_taken_before_the_server_binds_it_is_replaced(sample_index: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = iter([busy])
        monkeypatch.setattr(launch_module, "free_port", lambda host: next(ports, None) or free_port(host))
        with ServeProcess(sample_index, "--verify", "none") as server:
            assert server.port != busy
            assert get_json(server.url + "/health")["status"] == "ok"


def test_a_server_that_ignores_sigterm_is_killed(tmp_path: Path, own_tmp: Path) -> None:
    server = ServeProcess(tmp_path / "x.sqlite3", program=FAKE, env={"FAKE_SERVE_MODE": "ignore-term"},
                          stop_timeout_s=1).start()
    assert server.proc.poll() is None
    assert server.stop() == -signal.SIGKILL
    assert list(own_tmp.iterdir()) == []


def test_a_server_that_never_answers_is_a_serve_error_and_is_stopped(tmp_path: Path, own_tmp: Path) -> None:
    server = ServeProcess(tmp_path / "x.sqlite3", program=FAKE, env={"FAKE_SERVE_MODE": "silent"},
                          start_timeout_s=1, stop_timeout_s=5)
    with pytest.raises(ServeError, match=r"not ready within 1 s \(last: URLError.*\): fake serve \(silent\)"):
        server.start()
    assert server.proc.returncode == -signal.SIGTERM
    assert list(own_tmp.iterdir()) == []


def test_a_started_server_can_enter_a_with_block(sample_index: Path) -> None:
    """``with ServeProcess(...).start() as server``: started once, stopped on leaving."""
    server = ServeProcess(sample_index, "--verify", "none").start()
    with server as same:
        assert same is server and get_json(server.url + "/health")["status"] == "ok"
    assert server.proc.returncode == 0
    with pytest.raises(RuntimeError, match="starts once"):
        server.start()


def test_a_server_never_stopped_is_stopped_when_the_interpreter_exits(sample_index: Path, tmp_path: Path) -> None:
    """A caller that never reaches stop() (a test failing in between) leaves no server behind."""
    script = ("import sys\nfrom drsearch.server import ServeProcess\n"
              f"server = ServeProcess({str(sample_index)!r}, '--verify', 'none').start()\n"
              "print(server.pid, server.tmp_dir, flush=True)\n")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    pid, tmp_dir = p.stdout.split()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)
    assert not Path(tmp_dir).exists()
