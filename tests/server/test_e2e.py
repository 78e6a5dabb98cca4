"""End to end: a real `drsearch serve` with 2 uvicorn workers on a free 127.0.0.1 port."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from drsearch.contract import canonical_json as dumps
from drsearch.index import BlockList, Engine

from ..helpers import free_port
from .conftest import BLOCK_QUERY

pytestmark = pytest.mark.slow


def drsearch_exe() -> str:
    return shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    base: str
    log: Path

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the server and its workers
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        return self.proc.returncode


def start(tmp: Path, *args: str, workers: int = 2) -> Server:
    port = free_port()
    log = tmp / f"serve-{port}.log"
    proc = subprocess.Popen(
        [drsearch_exe(), "serve", *args, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(proc, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {log.read_text()[-1000:]}")
        try:  # every worker has built its app (and its counter file) once /stats counts it live
            stats = httpx.get(server.base + "/stats", timeout=1)
            if stats.status_code == 200 and stats.json()["server"]["workers"]["live"] >= workers:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.stop()
    raise AssertionError(f"no /health within 60 s: {log.read_text()[-1000:]}")


@pytest.fixture(scope="module")
def served(sample_index: Path, blocklist: BlockList, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("e2e")
    blocked = tmp / "blocked.txt"
    blocked.write_text("\n".join(sorted(blocklist.docids)) + "\n")
    server = start(tmp, "--database", str(sample_index), "--blocked-docids", str(blocked))
    yield server
    assert server.stop() == 0, server.log.read_text()[-2000:]


def fresh_connection_post(base: str, path: str, body: dict[str, object]) -> httpx.Response:
    with httpx.Client(base_url=base, timeout=30) as c:  # a new connection: any worker may answer
        return c.post(path, json=body)


def test_two_workers_answer_identically_and_stats_aggregate(served: Server, sample_index: Path,
                                                            blocklist: BlockList, blocked_docid: str) -> None:
    before = httpx.get(served.base + "/stats").json()["server"]
    queries = [("video game streaming", 10), (BLOCK_QUERY, 100), ('"NEAR(docid:*', 5), ("climate policy", 37)]
    batch = [("/search", {"query": q, "k": k}) for q, k in queries] * 4
    batch += [("/open", {"docid": blocked_docid}), ("/open", {"docid": "no-such"})] * 2
    responses: list[tuple[tuple[str, dict[str, object]], httpx.Response]] = []
    deadline = time.monotonic() + 20
    with ThreadPoolExecutor(8) as pool:  # fresh connections until both workers have answered
        while len({r.headers["x-drsearch-worker"] for _, r in responses}) < 2 or len(responses) < 60:
            assert time.monotonic() < deadline, "only one worker answered"
            responses += pool.map(lambda j: (j, fresh_connection_post(served.base, *j)), batch)
    n_search = sum(path == "/search" for (path, _), _ in responses)
    n_open = len(responses) - n_search

    with Engine.open(sample_index, blocklist) as engine:
        for (path, body), r in responses:
            if path == "/search":
                assert r.status_code == 200
                assert r.content == dumps(engine.search(body["query"], body["k"]).to_dict()).encode()
            else:
                assert r.status_code == 404 and r.json()["error"]["type"] == "not_found"

    after = httpx.get(served.base + "/stats").json()["server"]
    assert after["workers"]["live"] == 2
    assert after["endpoints"]["search"]["requests"] - before["endpoints"]["search"]["requests"] == n_search
    assert after["endpoints"]["open"]["requests"] - before["endpoints"]["open"]["requests"] == n_open
    assert after["endpoints"]["open"]["errors"] - before["endpoints"]["open"]["errors"] == n_open
    assert "blocked" not in json.dumps(after)  # blocked opens are counted as the 404s they are
    assert after["endpoints"]["search"]["latency_ms"]["p99"] > 0
    metrics = httpx.get(served.base + "/metrics").text
    assert "blocked_open" not in metrics
    assert f'drsearch_requests_total{{endpoint="search"}} {after["endpoints"]["search"]["requests"]}' in metrics


def test_health_and_bad_requests_over_real_http(served: Server, blocklist: BlockList) -> None:
    health = httpx.get(served.base + "/health").json()
    on_disk = BlockList.from_bytes(("\n".join(sorted(blocklist.docids)) + "\n").encode())
    assert health["blocklist"] == {"enabled": True, "sha256": on_disk.sha256, "count": len(blocklist),
                                   "matched": len(blocklist), "origin": "file", "release_sha256": None}
    r = httpx.post(served.base + "/search", content=b"\xff not utf-8")
    assert r.status_code == 422 and r.json()["error"]["type"] == "invalid_json"
    r = httpx.post(served.base + "/search", content=b"x" * (2 << 20))
    assert r.status_code == 413 and r.json()["error"]["type"] == "payload_too_large"
    r = httpx.get(served.base + "/nope")
    assert r.status_code == 404 and r.json()["error"]["type"] == "no_such_endpoint"


def test_startup_log_says_when_there_is_no_blocklist(sample_index: Path, tmp_path: Path) -> None:
    server = start(tmp_path, "--database", str(sample_index), "--max-k", "20", workers=1)
    try:
        health = httpx.get(server.base + "/health").json()
        assert health["blocklist"]["enabled"] is False and health["blocklist"]["count"] == 0
        assert httpx.post(server.base + "/search", json={"query": "game", "k": 21}).status_code == 422
    finally:
        assert server.stop() == 0
    log = server.log.read_text()
    assert "no --blocked-docids: every document is served" in log
    assert "NO blocklist" in log and "Traceback" not in log


@pytest.mark.parametrize(("args", "message"), [
    (["--database", "/nonexistent/corpus.sqlite3"], "no such file"),
    (["--database", "{junk}"], "not a drsearch index"),
    (["--database", "{padded}"], "truncated or padded"),
    (["--database", "{index}", "--blocked-docids", "/nonexistent/blocked.txt"], "cannot read blocklist"),
    (["--database", "{index}", "--blocked-docids", "{badblock}"], "malformed docid"),
    (["--database", "{index}", "--max-k", "101"], "--max-k"),
    (["--database", "{index}", "--workers", "0"], "--workers"),
    (["--database", "{index}", "--time-limit", "-1"], "--time-limit"),
    (["--database", "{index}", "--request-timeout", "-1"], "--request-timeout"),  # the deprecated alias
    (["--database", "{index}", "--verify", "paranoid"], "--verify"),
    (["--database", "{index}", "--host", "192.0.2.1"], "cannot bind"),  # not this machine's address
])
def test_serve_refuses_to_start_with_one_line(sample_index: Path, tmp_path: Path, args: list[str],
                                              message: str) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not a database" * 100)
    padded = tmp_path / "padded.sqlite3"
    padded.write_bytes(sample_index.read_bytes() + b"\0" * 100)
    badblock = tmp_path / "bad.txt"
    badblock.write_text("ok-docid\nhas space\n")
    argv = [a.format(junk=junk, padded=padded, index=sample_index, badblock=badblock) for a in args]
    p = subprocess.run([drsearch_exe(), "serve", *argv, "--port", str(free_port())],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert message in p.stderr and "Traceback" not in p.stderr
    assert len([line for line in p.stderr.splitlines() if line.startswith("drsearch")]) == 1


def test_serve_refuses_a_busy_port_with_one_line(sample_index: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        p = subprocess.run([drsearch_exe(), "serve", "--database", str(sample_index), "--port", str(port)],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.strip() == f"drsearch: error: --host 127.0.0.1 --port {port}: cannot bind " \
                               "(Address already in use)"


def test_verify_levels(sample_index: Path) -> None:
    from drsearch.server import verify_corpus

    with Engine.open(sample_index) as e:
        identity = e.meta["content_identity"]
    for level in ("none", "fast", "deep"):
        report = verify_corpus(sample_index, level)  # type: ignore[arg-type]
        assert report.identity == identity and report.documents == 184 and report.level == level


def test_deep_verify_catches_what_fast_cannot(sample_index: Path, tmp_path: Path) -> None:
    import apsw

    from drsearch.contract import IncompatibleIndexError
    from drsearch.server import verify_corpus

    tampered = tmp_path / "tampered.sqlite3"
    tampered.write_bytes(sample_index.read_bytes())
    conn = apsw.Connection(str(tampered))
    conn.execute("UPDATE chunks SET text = 'tampered' WHERE id = 7")  # FTS5 index now disagrees
    conn.close()
    assert verify_corpus(tampered, "fast").documents == 184
    with pytest.raises(IncompatibleIndexError, match="integrity check failed"):
        verify_corpus(tampered, "deep")


def test_config_travels_through_the_environment(sample_index: Path) -> None:
    from drsearch.server import CONFIG_ENV, ServeConfig, ServerSettings, app_from_env

    config = ServeConfig(database=sample_index, settings=ServerSettings(max_k=7))
    env = config.to_env()
    assert json.loads(env[CONFIG_ENV])["settings"]["max_k"] == 7
    assert ServeConfig.from_env(env) == config
    os.environ.update(env)
    try:
        app = app_from_env()
        assert app.state.settings.max_k == 7
    finally:
        del os.environ[CONFIG_ENV]
