"""The hardening of a real `drsearch serve` on 127.0.0.1, probed as a hostile client would.

Blocked = absent even to a client that watches counters; the request time limit covers
the whole request; idle, slow, huge and too many connections are cut off; a client that
goes away mid-body is not a server error; damaged bytes are a ``corrupt_index`` and make
/health degraded; a crafted database is refused with one line.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest

from drsearch.index import BlockList, Engine

from ..helpers import free_port
from ..index.test_engine_hardening import flip_a_bit_in_a_document
from .test_e2e import Server, drsearch_exe, start

pytestmark = pytest.mark.slow


def port_of(server: Server) -> int:
    return int(server.base.rsplit(":", 1)[1])


def connect(server: Server) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port_of(server)), timeout=10)
    return s


def read_until_closed(s: socket.socket, timeout: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and when it closed (s after the call)."""
    start_t = time.monotonic()
    data = b""
    s.settimeout(timeout)
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        return data, float("inf")
    except ConnectionResetError:
        pass
    return data, time.monotonic() - start_t


def wait_for(predicate: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


# -- 1. blocked = absent, also to a client that watches the server ----------------------------

def _public_counters(server: Server) -> tuple[Any, str]:
    stats = httpx.get(server.base + "/stats").json()["server"]
    counts = {name: {k: v for k, v in ep.items() if k != "latency_ms"}
              for name, ep in stats["endpoints"].items()}
    metrics = "\n".join(line for line in httpx.get(server.base + "/metrics").text.splitlines()
                        if "duration" not in line and "uptime" not in line)
    return (counts, stats["requests"], stats["errors"], stats["client_disconnects"]), metrics


@pytest.fixture(scope="module")
def blocked_server(sample_index: Path, blocklist: BlockList,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("limits")
    blocked = tmp / "blocked.txt"
    blocked.write_text("\n".join(sorted(blocklist.docids)) + "\n")
    server = start(tmp, "--database", str(sample_index), "--blocked-docids", str(blocked), workers=1)
    yield server
    assert server.stop() == 0, server.log.read_text()[-2000:]


def test_blocked_and_missing_move_counters_identically(blocked_server: Server, sample_index: Path,
                                                       blocked_docid: str) -> None:
    with Engine.open(sample_index) as e:
        url = e.open_document(docid=blocked_docid).url
    for blocked, missing in (({"docid": blocked_docid}, {"docid": "web-" + "0" * 16}),
                             ({"url": url}, {"url": "https://unknown.example/page"})):
        steps = []
        for body in (blocked, missing):
            c0, m0 = _public_counters(blocked_server)
            httpx.post(blocked_server.base + "/open", json=body)
            time.sleep(0.2)
            c1, m1 = _public_counters(blocked_server)
            # what changed: counter by counter
            steps.append((json.dumps(c1[0]["open"]), c1[1] - c0[1], c1[2] - c0[2],
                          sorted(set(m1.splitlines()) - set(m0.splitlines()))))
        (open_b, req_b, err_b, lines_b), (open_m, req_m, err_m, lines_m) = steps
        assert (req_b, err_b) == (req_m, err_m)
        # the open row moved by one request and one error both times, nothing else did
        assert json.loads(open_m)["requests"] - json.loads(open_b)["requests"] == 1
        assert json.loads(open_m)["errors"] - json.loads(open_b)["errors"] == 1
        assert [line.rsplit(" ", 1)[0] for line in lines_b] == [line.rsplit(" ", 1)[0] for line in lines_m]
    assert "blocked" not in json.dumps(httpx.get(blocked_server.base + "/stats").json()["server"])
    assert "blocked_open" not in httpx.get(blocked_server.base + "/metrics").text


def test_stats_names_the_database_file_only(blocked_server: Server, sample_index: Path) -> None:
    stats = httpx.get(blocked_server.base + "/stats").json()
    assert stats["file"]["path"] == sample_index.name
    assert str(sample_index.parent) not in httpx.get(blocked_server.base + "/stats").text


def test_background_deep_verification_reports_ok(blocked_server: Server) -> None:
    health = wait_for(lambda: (h := httpx.get(blocked_server.base + "/health").json())["verify"]["state"]
                      in ("ok", "failed") and h)
    assert health["verify"] == {"state": "ok", "message": ""}
    assert health["status"] == "ok" and health["problems"] == []
    assert "deep verification" in blocked_server.log.read_text()


# -- 2. the request limits are the whole request's --------------------------------------------

def _short_terms(index: Path, n: int) -> list[str]:
    with Engine.open(index) as e:
        return [t for (t,) in e._conn.execute(
            "SELECT term FROM terms ORDER BY length(term), df DESC, term LIMIT ?", (n,))]


def _search_seconds(server: Server) -> float:
    """The server's summed latency of every /search request so far (/metrics)."""
    prefix = 'drsearch_request_duration_seconds_sum{endpoint="search"} '
    lines = [line for line in httpx.get(server.base + "/metrics").text.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, lines
    return float(lines[0][len(prefix):])


def test_a_query_of_thousands_of_terms_is_refused_naming_the_cap(blocked_server: Server) -> None:
    words = [f"{chr(97 + i // 676 % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i % 26)}{i % 10}"
             for i in range(6553)]
    query = " ".join(words)[:32763]
    assert len(query.encode()) == 32763 and len(set(query.split())) >= 6552
    before = _search_seconds(blocked_server)
    r = httpx.post(blocked_server.base + "/search", json={"query": query, "k": 100}, timeout=30)
    assert r.status_code == 422 and r.json()["error"]["type"] == "invalid_query"
    assert "1024" in r.json()["error"]["message"]
    # Refused before any search: the server's own time for the request (its /metrics latency
    # sum, this module's server answering one search at a time), not the client's wall time,
    # which on a loaded machine also counts this process's turns and the connection (3.4 s
    # once at load 20 on two cores, for a refusal that takes milliseconds).
    spent = _search_seconds(blocked_server) - before
    assert 0 < spent < 2.0, spent


def test_a_search_past_its_time_limit_is_a_prompt_503(sample_index: Path, tmp_path: Path) -> None:
    """1,024 short terms at k=100 take well over 4 ms (parsing, 1,024 term lookups, 100
    snippets); with a 2 ms limit the answer is a prompt 503. (Each stage's own deadline
    checks, the snippets' included, are tested on the engine: test_engine_hardening.py and
    test_snippet_native.py.)"""
    query = " ".join(_short_terms(sample_index, 1024))
    with Engine.open(sample_index) as e:  # the same query without a limit takes longer
        t = time.monotonic()
        e.search(query, 100)
        assert time.monotonic() - t > 0.004
    server = start(tmp_path, "--database", str(sample_index), "--time-limit", "0.002",
                   "--verify", "none", workers=1)
    # The head and the body in one write, so both reach the server in one read: the 2 ms
    # limit also covers reading the body, and a body sent as a second segment (as httpx
    # sends it) waited for its own turn of a loaded event loop and got 408.
    body = json.dumps({"query": query, "k": 100}).encode()
    request = b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    try:
        with connect(server) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # connected and served once:
            assert _read_response(s)[0] == 200                  # the timing below is the request's only
            t = time.monotonic()
            s.sendall(request)
            status, headers, data = _read_response(s)
            elapsed = time.monotonic() - t
        assert status == 503 and json.loads(data)["error"]["type"] == "query_timeout", data[:200]
        assert headers["retry-after"] == "1"
        assert elapsed < 0.6, elapsed
    finally:
        assert server.stop() == 0


def _read_response(s: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length from ``s``: status, headers, body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers["content-length"]):
        chunk = s.recv(65536)
        assert chunk, body
        body += chunk
    return int(lines[0].split()[1]), headers, body


def test_health_answers_while_the_worker_searches(blocked_server: Server, sample_index: Path) -> None:
    """The only worker is busy with 40 slow searches (1,024 terms, k=100, sent at once on their
    own connections): /health still answers at once, before the last of them."""
    body = json.dumps({"query": " ".join(_short_terms(sample_index, 1024)), "k": 100}).encode()
    request = (b"POST /search HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with contextlib.ExitStack() as stack:
        searching = [stack.enter_context(connect(blocked_server)) for _ in range(40)]
        asking = stack.enter_context(connect(blocked_server))
        t0 = time.monotonic()
        for s in searching:
            s.sendall(request)
        time.sleep(0.05)  # the worker has the searches by now
        t = time.monotonic()
        asking.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        first: dict[socket.socket, float] = {}  # when each answer's first byte arrived
        while len(first) < len(searching) + 1 and time.monotonic() - t < 60:
            ready, _, _ = select.select([c for c in (*searching, asking) if c not in first], [], [], 30)
            for c in ready:
                first[c] = time.monotonic()
        health, _ = read_until_closed(asking, timeout=30)
        results = [read_until_closed(s, timeout=30)[0] for s in searching]
    assert all(r.startswith(b"HTTP/1.1 200 ") for r in results), [r[:100] for r in results]
    assert health.startswith(b"HTTP/1.1 200 "), health[:100]
    # /health was answered while searches still ran, and at once
    last_search = max(first[s] for s in searching)
    assert first[asking] < last_search, (first[asking] - t0, last_search - t0)
    assert first[asking] - t < 0.3, first[asking] - t


@pytest.fixture(scope="module")
def tight_server(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Short timeouts and small limits, so each is seen within a second or two."""
    tmp = tmp_path_factory.mktemp("tight")
    server = start(tmp, "--database", str(sample_index), "--verify", "none", "--idle-timeout", "1",
                   "--header-timeout", "1", "--request-timeout", "1", "--max-header-bytes", "4096",  # old alias
                   "--max-connections", "6", workers=1)
    yield server
    assert server.stop() == 0, server.log.read_text()[-2000:]


def test_idle_connection_that_never_sends_is_closed(tight_server: Server) -> None:
    with connect(tight_server) as s:
        data, closed_after = read_until_closed(s, timeout=10)
    assert data == b"" and closed_after < 3


def test_slowloris_header_drip_gets_408(tight_server: Server) -> None:
    with connect(tight_server) as s:
        s.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\n")
        t = time.monotonic()
        data = b""
        try:  # one header byte every 0.2 s: each resets an idle timer, never the header timer
            while time.monotonic() - t < 10:
                s.sendall(b"X")
                r, _, _ = select.select([s], [], [], 0.2)
                if r:
                    data = s.recv(65536)
                    break
        except (BrokenPipeError, ConnectionResetError):  # closed between two drips: read what came
            data, _ = read_until_closed(s, timeout=1)
        elapsed = time.monotonic() - t
    assert data.startswith(b"HTTP/1.1 408 "), data[:200]
    assert b'"header_timeout"' in data and elapsed < 3


def test_partial_body_gets_408_within_the_request_time_limit(tight_server: Server) -> None:
    with connect(tight_server) as s:
        s.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"query\": ")
        data, closed_after = read_until_closed(s, timeout=10)
    assert data.startswith(b"HTTP/1.1 408 "), data[:300]
    assert b'"request_timeout"' in data and closed_after < 3


def test_header_over_the_limit_gets_431(tight_server: Server) -> None:
    with connect(tight_server) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 6000 + b"\r\n\r\n")
        data, _ = read_until_closed(s, timeout=10)
    assert data.startswith(b"HTTP/1.1 431 "), data[:300]
    assert b'"header_too_large"' in data
    health = httpx.get(tight_server.base + "/health")
    assert health.status_code == 200
    # refused before the app saw the request, yet tagged like every response
    assert f"\r\nx-drsearch-identity: {health.headers['x-drsearch-identity']}\r\n".encode() in data


def test_ten_megabyte_header_is_cut_off_early(tight_server: Server) -> None:
    with connect(tight_server) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sent, data = 0, b""
        try:
            while sent < 10 << 20:
                s.sendall(b"a" * 65536)
                sent += 65536
                if select.select([s], [], [], 0)[0]:
                    data = s.recv(65536)
                    break
            else:
                s.sendall(b"\r\n\r\n")
                data, _ = read_until_closed(s, timeout=10)
        except (BrokenPipeError, ConnectionResetError):
            pass
    assert not data.startswith(b"HTTP/1.1 200"), data[:200]
    assert data == b"" or data.startswith(b"HTTP/1.1 431 "), data[:200]
    assert sent < 10 << 20  # the server hung up long before the header was complete
    assert httpx.get(tight_server.base + "/health").status_code == 200


def test_connection_limit_is_enforced(tight_server: Server) -> None:
    time.sleep(0.3)  # earlier tests' connections are closed by now
    held = [connect(tight_server) for _ in range(6)]
    try:
        time.sleep(0.3)
        with connect(tight_server) as extra:
            data, closed_after = read_until_closed(extra, timeout=5)
        assert data.startswith(b"HTTP/1.1 503 ") and b'"too_many_connections"' in data, data[:300]
        assert closed_after < 1
    finally:
        for s in held:
            s.close()
    time.sleep(0.3)
    assert httpx.get(tight_server.base + "/health").status_code == 200  # capacity is back


def test_405_carries_allow(tight_server: Server) -> None:
    r = httpx.get(tight_server.base + "/search")
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert r.json()["error"]["type"] == "method_not_allowed"


def test_client_gone_mid_body_is_not_a_server_error(tight_server: Server) -> None:
    before = httpx.get(tight_server.base + "/stats").json()["server"]["endpoints"]["search"]
    with connect(tight_server) as s:
        s.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"query\": ")
        time.sleep(0.2)
    after = wait_for(lambda: (ep := httpx.get(tight_server.base + "/stats").json()["server"]["endpoints"]
                              ["search"])["requests"] > before["requests"] and ep)
    assert after["server_errors"] == before["server_errors"]
    assert after["client_disconnects"] == before["client_disconnects"] + 1
    metrics = httpx.get(tight_server.base + "/metrics").text
    assert f'drsearch_client_disconnects_total{{endpoint="search"}} {after["client_disconnects"]}' in metrics
    log = tight_server.log.read_text()
    assert "internal error" not in log and "ERROR" not in log


# -- corruption ---------------------------------------------------------------------------------

def test_a_flipped_bit_is_corrupt_index_and_health_degraded(sample_index: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.sqlite3"
    docid = flip_a_bit_in_a_document(sample_index, damaged)
    server = start(tmp_path, "--database", str(damaged), workers=2)  # --verify fast passes it
    try:
        assert httpx.get(server.base + "/health").json()["status"] in ("ok", "degraded")
        r = httpx.post(server.base + "/open", json={"docid": docid})
        assert r.status_code == 500, r.text
        error = r.json()["error"]
        assert error["type"] == "corrupt_index" and "validate --deep" in error["message"]
        assert str(tmp_path) not in error["message"]
        # every worker reports it (the run's directory is shared), and the deep check fails
        health = wait_for(lambda: (h := httpx.get(server.base + "/health").json())["verify"]["state"]
                          == "failed" and h, timeout=60)
        assert health["status"] == "degraded"
        assert any("damaged bytes" in p for p in health["problems"])
        assert any("deep verification failed" in p for p in health["problems"])
        # the file's name only, as /stats: where the server keeps it is no client's business
        health_text = httpx.get(server.base + "/health").text
        assert damaged.name in health_text and str(tmp_path) not in health_text, health_text
        for _ in range(6):
            with httpx.Client() as fresh:
                assert fresh.get(server.base + "/health").json()["status"] == "degraded"
        assert httpx.post(server.base + "/search", json={"query": "game"}).status_code == 200
    finally:
        assert server.stop() == 0
    assert "internal error" not in server.log.read_text()


@pytest.mark.parametrize(("table", "key", "value", "message"), [
    ("meta", "bm25", '"x"', "'bm25'"),
    ("meta", "documents", '"many"', "'documents'"),
    ("meta", "tokenizer", "5", "'tokenizer'"),
    ("meta", "bm25", '{"k1": "1.2", "b": 0.75}', "k1"),
    ("meta", "chunks", "999999", "chunk_doc"),
    ("arrays", "chunk_doc", "bogus", "'chunk_doc'"),
    ("arrays", "chunk_len", "<f8", "'chunk_len'"),
])
def test_serve_refuses_a_crafted_database_with_one_line(sample_index: Path, tmp_path: Path, table: str,
                                                        key: str, value: str, message: str) -> None:
    crafted = tmp_path / "crafted.sqlite3"
    crafted.write_bytes(sample_index.read_bytes())
    conn = apsw.Connection(str(crafted))
    if table == "meta":
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    else:
        conn.execute("UPDATE arrays SET dtype = ? WHERE name = ?", (value, key))
    conn.close()
    p = subprocess.run([drsearch_exe(), "serve", "--database", str(crafted), "--port", str(free_port())],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("drsearch: error: "), p.stderr
    assert message in lines[0] and "internal error" not in p.stderr


def connect_from(server: Server, source: str) -> socket.socket:
    """A connection to the server from the loopback address ``source`` (127.0.0.0/8 is all local)."""
    return socket.create_connection(("127.0.0.1", port_of(server)), timeout=10, source_address=(source, 0))


def _health_over(s: socket.socket) -> bytes:
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    return read_until_closed(s, timeout=10)[0]


def test_one_client_cannot_hold_every_connection(sample_index: Path, tmp_path: Path) -> None:
    """One peer address holds its cap of connections: its next one is refused at once, while
    another address is still served, and its own capacity comes back as it closes some."""
    server = start(tmp_path, "--database", str(sample_index), "--verify", "none",
                   "--max-connections", "20", "--max-client-connections", "3", workers=1)
    try:
        held = [connect_from(server, "127.0.0.1") for _ in range(3)]
        try:
            time.sleep(0.3)  # the worker has accepted them
            with connect_from(server, "127.0.0.1") as extra:
                data, closed_after = read_until_closed(extra, timeout=5)
            assert data.startswith(b"HTTP/1.1 503 "), data[:300]
            assert b'"too_many_client_connections"' in data and b"limit of 3" in data, data[:300]
            assert closed_after < 1
            with connect_from(server, "127.0.0.2") as other:  # another client is not kept out
                assert _health_over(other).startswith(b"HTTP/1.1 200 ")
            # the held connections still work
            held[0].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert held[0].recv(65536).startswith(b"HTTP/1.1 200 ")
        finally:
            for s in held:
                s.close()
        time.sleep(0.3)
        with connect_from(server, "127.0.0.1") as again:  # its capacity is back
            assert _health_over(again).startswith(b"HTTP/1.1 200 ")
        assert "too_many_client_connections" in server.log.read_text()
    finally:
        assert server.stop() == 0
