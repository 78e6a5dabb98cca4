"""What one client can cost ``drsearch kg serve``: no federation (the server
fetches no URL), a time limit that kills the query's worker process (at the deadline and
when its client leaves), a cap on the answer's size, CONSTRUCT/DESCRIBE answered, and
``drsearch serve``'s connection limits (body size, idle timeout, connections). Each against
a real ``drsearch kg serve`` subprocess on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pyoxigraph
import pytest

from drsearch.benchmark.generate.drbencher.kgquery import keywords, negotiate, uses_federation

from .kgserver import KG, kg_serve_process

CARTESIAN_COUNT = "SELECT (COUNT(*) AS ?n) { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # ~9e8 rows: minutes


# -- federation ----------------------------------------------------------------------------------

class _Recorder(BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b'{"head":{"vars":[]},"results":{"bindings":[{}]}}'
        self.send_response(200)
        self.send_header("content-type", "application/sparql-results+json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def recorder() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("R", (_Recorder,), {"hits": hits}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sparql", hits
    finally:
        server.shutdown()
        server.server_close()


def test_service_is_refused_and_the_server_fetches_no_url() -> None:
    with recorder() as (target, hits), kg_serve_process() as (url, _):
        host = urlsplit(target).netloc
        federated = [
            f"SELECT * {{ SERVICE <{target}> {{ ?s ?p ?o }} }}",
            f"SELECT * {{ ?x ?y ?z OPTIONAL {{ service silent <{target}> {{ ?s ?p ?o }} }} }} LIMIT 1",
            f"PREFIX e: <http://{host}/> SELECT * {{ SeRvIcE e:sparql {{ ?s ?p ?o }} }}",
            f"SELECT * {{ \\u0053ERVICE <{target}> {{ ?s ?p ?o }} }}",  # SPARQL code-point escape
            f"ASK {{ SERVICE <{target}> {{ ?s ?p ?o }} }}",
            f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}",
        ]
        for query in federated:
            for send in (lambda q: httpx.get(url, params={"query": q}, timeout=30),
                         lambda q: httpx.post(url, data={"query": q}, timeout=30),
                         lambda q: httpx.post(url, content=q, headers={"content-type": "application/sparql-query"},
                                              timeout=30)):
                r = send(query)
                assert r.status_code == 400, (query, r.status_code, r.text)
                assert r.json()["error"]["type"] == "federation_refused"
        # the word in a comment, a string, a variable or a local name is no federation
        for query in [f"SELECT ?service WHERE {{ ?service ?p 'SERVICE <{target}>' }} # SERVICE <{target}>",
                      "PREFIX bd: <http://www.bigdata.com/rdf#> SELECT * { ?s bd:serviceParam ?o }"]:
            r = httpx.get(url, params={"query": query}, timeout=30)
            assert r.status_code == 200, r.text
        time.sleep(0.5)
    assert hits == []


def test_the_federation_check_reads_tokens_not_text() -> None:
    assert uses_federation("SELECT * { SERVICE <http://x/> { ?s ?p ?o } }")
    assert uses_federation("SELECT * { ?s ?p 1SERVICE <http://x/> { } }")  # conservative: a longer word
    assert uses_federation("PREFIX : <http://x/> SELECT * { SERVICE:a { ?s ?p ?o } }")
    assert not uses_federation("SELECT * { ?s <http://x/SERVICE> 'SERVICE' } # SERVICE")
    assert not uses_federation("SELECT * { ?s ?p '''a\n SERVICE''' . ?s ?p \"x\\\" SERVICE\" }")
    assert not uses_federation("SELECT ?service { ?service ?p ?o FILTER(?o < 3 && ?o > 1) }")
    assert keywords("SELECT ?x { ?x a wd:Q5 } # WHERE") == ["SELECT", "A", "WD"]
    assert negotiate(None, ("a/b", "c/d")) == "a/b"
    assert negotiate("c/d;q=0.9, a/b;q=0.1", ("a/b", "c/d")) == "c/d"
    assert negotiate("text/html", ("a/b",)) is None
    assert negotiate("text/html, */*;q=0.1", ("a/b",)) == "a/b"


# -- time limit ----------------------------------------------------------------------------------

def _children(pid: int) -> dict[int, float]:
    """The live child processes of ``pid``: pid -> CPU seconds used (user + system)."""
    found: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found[int(entry)] = (int(fields[11]) + int(fields[12])) / tick
    return found


def _started(pid: int, worker: int, within_s: float = 30.0) -> None:
    """Return once ``worker`` (a child of ``pid``) uses CPU: it runs the query."""
    end = time.monotonic() + within_s
    before = _children(pid)[worker]
    while time.monotonic() < end:
        time.sleep(0.2)
        if _children(pid).get(worker, before) > before + 0.02:
            return
    raise AssertionError("the worker did not start the query")


def _answers_again(url: str, within_s: float = 60.0) -> None:
    """Return once a small query is answered 200 (503 while the replacement worker loads)."""
    end = time.monotonic() + within_s
    while True:
        r = httpx.get(url, params={"query": "ASK { ?s ?p ?o }"}, timeout=60)
        if r.status_code == 200 and r.json()["boolean"] is True:
            return
        assert r.status_code == 503 and time.monotonic() < end, r.text


def _cpu_growth(pid: int, over_s: float) -> float:
    before = _children(pid)
    time.sleep(over_s)
    after = _children(pid)
    return sum(cpu - before.get(c, 0.0) for c, cpu in after.items() if c in before)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to watch the worker processes")
def test_a_query_past_its_time_limit_is_503_and_its_worker_is_killed() -> None:
    with kg_serve_process(KG, "--time-limit", "2", "--query-workers", "1") as (url, proc):
        workers = set(_children(proc.pid))
        assert len(workers) == 1
        t = time.monotonic()
        r = httpx.get(url, params={"query": CARTESIAN_COUNT}, timeout=60)
        elapsed = time.monotonic() - t
        assert r.status_code == 503 and r.json()["error"]["type"] == "query_timeout", r.text
        assert "2 s" in r.json()["error"]["message"] and elapsed < 10
        time.sleep(0.5)
        assert not workers & set(_children(proc.pid))  # the worker that ran it is gone
        _answers_again(url)  # a replacement worker
        assert _cpu_growth(proc.pid, 1.0) < 0.2  # and nothing burns CPU any more


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to watch the worker processes")
def test_an_abandoned_query_stops_when_its_client_leaves() -> None:
    with kg_serve_process(KG, "--time-limit", "600", "--query-workers", "1") as (url, proc):
        [worker] = _children(proc.pid)
        u = urlsplit(url)
        sock = socket.create_connection((u.hostname, u.port))
        target = httpx.URL(url, params={"query": CARTESIAN_COUNT})
        sock.sendall(f"GET {target.raw_path.decode()} HTTP/1.1\r\nhost: x\r\n\r\n".encode())
        _started(proc.pid, worker)
        sock.close()  # the client leaves
        end = time.monotonic() + 5
        while worker in _children(proc.pid) and time.monotonic() < end:
            time.sleep(0.1)
        assert worker not in _children(proc.pid)
        _answers_again(url)  # a replacement worker
        assert _cpu_growth(proc.pid, 1.0) < 0.2


# -- answer size ---------------------------------------------------------------------------------

def test_an_answer_over_the_size_cap_is_422_naming_it() -> None:
    with kg_serve_process(KG, "--max-result-bytes", "100000") as (url, _):
        t = time.monotonic()
        r = httpx.get(url, params={"query": "SELECT * { ?a ?b ?c . ?d ?e ?f }"}, timeout=60)
        assert r.status_code == 422 and r.json()["error"]["type"] == "result_too_large", r.status_code
        assert "100000 bytes" in r.json()["error"]["message"] and time.monotonic() - t < 10
        r = httpx.get(url, params={"query": "SELECT * { ?a ?b ?c } LIMIT 10"}, timeout=60)
        assert r.status_code == 200 and len(r.json()["results"]["bindings"]) == 10


# -- CONSTRUCT / DESCRIBE ------------------------------------------------------------------------

def named(quads: list[Any]) -> set[Any]:
    """The quads without a blank node (a parser gives blank nodes labels of its own)."""
    return {q for q in quads if not isinstance(q.subject, pyoxigraph.BlankNode)
            and not isinstance(q.object, pyoxigraph.BlankNode)}


def media(r: httpx.Response) -> str:
    return r.headers["content-type"].split(";")[0]


def test_construct_and_describe_answer_turtle_or_n_triples_by_accept() -> None:
    construct = ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o . "
                 "FILTER(?s = <http://www.wikidata.org/entity/Q3375>) }")
    describe = "DESCRIBE <http://www.wikidata.org/entity/Q3375>"
    with kg_serve_process() as (url, _):
        for query in (construct, describe):
            r = httpx.get(url, params={"query": query}, timeout=60)
            assert r.status_code == 200 and media(r) == "text/turtle", r.text
            turtle = list(pyoxigraph.parse(r.content, format=pyoxigraph.RdfFormat.TURTLE))
            r = httpx.post(url, data={"query": query}, headers={"accept": "application/n-triples"}, timeout=60)
            assert r.status_code == 200 and media(r) == "application/n-triples"
            triples = list(pyoxigraph.parse(r.content, format=pyoxigraph.RdfFormat.N_TRIPLES))
            assert len(triples) == len(turtle) > 5  # the same triples (blank nodes relabelled by the parser)
            assert named(triples) == named(turtle)
            r = httpx.get(url, params={"query": query}, headers={"accept": "application/sparql-results+json"},
                          timeout=60)
            assert r.status_code == 406 and "text/turtle" in r.json()["error"]["message"]
        r = httpx.get(url, params={"query": "ASK { ?s ?p ?o }"}, headers={"accept": "text/turtle"}, timeout=60)
        assert r.status_code == 406
        r = httpx.get(url, params={"query": "SELECT ?s { ?s ?p ?o } LIMIT 2"}, headers={"accept": "text/csv"},
                      timeout=60)
        assert r.status_code == 200 and media(r) == "text/csv" and r.text.startswith("s\r\n")


# -- connection limits ---------------------------------------------------------------------------

def _raw(url: str) -> socket.socket:
    u = urlsplit(url)
    sock = socket.create_connection((u.hostname, u.port))
    sock.settimeout(10)
    return sock


def _reply(sock: socket.socket) -> bytes:
    """One whole HTTP response (head and a content-length body) read from ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


def test_an_oversized_body_is_413_unread() -> None:
    with kg_serve_process() as (url, _):
        sock = _raw(url)
        sock.sendall(b"POST /sparql HTTP/1.1\r\nhost: x\r\ncontent-type: application/sparql-query\r\n"
                     b"content-length: 2147483648\r\n\r\nASK {")
        reply = _reply(sock)
        assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
        assert b"payload_too_large" in reply and b"1048576" in reply
        sock.close()
        r = httpx.post(url, content="ASK { ?s ?p ?o }" + " " * (2 << 20),
                       headers={"content-type": "application/sparql-query"}, timeout=60)
        assert r.status_code == 413


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc to count threads")
def test_idle_connections_are_closed_and_cost_no_thread_each() -> None:
    with kg_serve_process(KG, "--idle-timeout", "1") as (url, proc):
        socks = [_raw(url) for _ in range(200)]
        time.sleep(0.3)
        assert _threads(proc.pid) < 40  # not a thread per connection
        time.sleep(1.5)
        for sock in socks:
            assert sock.recv(1024) == b""  # closed by the server
            sock.close()
        kept = _raw(url)  # a connection in use between requests is closed after the timeout too
        kept.sendall(b"GET /sparql?query=ASK%7B%7D HTTP/1.1\r\nhost: x\r\n\r\n")
        assert _reply(kept).startswith(b"HTTP/1.1 200")
        time.sleep(1.8)
        assert kept.recv(1024) == b""
        kept.close()


def test_connections_beyond_the_limit_are_503() -> None:
    with kg_serve_process(KG, "--max-connections", "5") as (url, _):
        socks = [_raw(url) for _ in range(5)]
        time.sleep(0.3)
        extra = _raw(url)
        assert _reply(extra).startswith(b"HTTP/1.1 503")
        for sock in [*socks, extra]:
            sock.close()
        time.sleep(0.3)
        assert httpx.get(url, params={"query": "ASK { ?s ?p ?o }"}, timeout=60).status_code == 200
