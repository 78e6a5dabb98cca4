"""A mixed fleet is an infrastructure failure, never mixed results.

Two real ``drsearch serve`` on 127.0.0.1 over the same corpus with different blocklists
stand for two replicas behind a load balancer: ``HttpSearcher`` records the identity of the
first answer (``x-drsearch-identity``) and refuses an answer from the other one, naming
both; ``drsearch run`` records such episodes as ``infra_error``, with that reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.agents import HttpSearcher, SearcherError
from drsearch.dev.chat import SEED_BASE, FakeLLM, serve_chat

from ..helpers import free_port as _free_port
from .conftest import BLOCKED
from .test_infra_failures import QIDS, _serve, lines, own_server, run


class RoundRobin(httpx.BaseTransport):
    """A load balancer in a transport: request i goes to ``ports[i % len(ports)]``."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.sent = 0
        self._inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        port = self.ports[self.sent % len(self.ports)]
        self.sent += 1
        request.url = request.url.copy_with(host="127.0.0.1", port=port)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


@pytest.fixture(scope="module")
def other_blocklist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One of the sample's three blocked docids: a valid list, with another SHA-256."""
    path = tmp_path_factory.mktemp("bl") / "one.txt"
    path.write_text(next(line for line in BLOCKED.read_text().splitlines() if line.startswith("d-")) + "\n")
    return path


@pytest.fixture(scope="module")
def two_replicas(sample_index: Path, other_blocklist: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    log = tmp_path_factory.mktemp("fleet") / "serve.log"
    a, b = _free_port(), _free_port()
    procs = [_serve(sample_index, a, log), _serve(sample_index, b, log, other_blocklist)]
    try:
        yield a, b
    finally:
        for p in procs:
            p.stop()


def identity(port: int) -> str:
    return httpx.get(f"http://127.0.0.1:{port}/health").headers["x-drsearch-identity"]


def test_a_replica_on_another_blocklist_is_refused_naming_both(two_replicas: tuple[int, int]) -> None:
    a, b = two_replicas
    assert identity(a) != identity(b) and identity(a).split(":")[0] == identity(b).split(":")[0]
    http = HttpSearcher(httpx.Client(base_url="http://fleet", transport=RoundRobin([a, b])), attempts=1)
    try:
        corpus = http.corpus()  # replica a
        assert http.identity == identity(a) == corpus.fleet_identity
        with pytest.raises(SearcherError) as e:
            http.search("video game streaming", 3)  # replica b
        assert identity(a) in str(e.value) and identity(b) in str(e.value)
        assert http.search("video game streaming", 3).ok  # replica a again: still accepted
    finally:
        http.close()


def test_replicas_of_one_identity_are_interchangeable(two_replicas: tuple[int, int]) -> None:
    a, _ = two_replicas
    http = HttpSearcher(httpx.Client(base_url="http://fleet", transport=RoundRobin([a, a])), attempts=1)
    try:
        http.corpus()
        assert all(http.search("video game", 2).ok for _ in range(4))
    finally:
        http.close()


def test_a_response_without_the_header_is_refused_and_a_proxys_5xx_is_retried(
        two_replicas: tuple[int, int]) -> None:
    a, _ = two_replicas
    bare = httpx.Response(200, json={"query": "x", "k": 1, "results": []})
    answers = iter([None, httpx.Response(502, text="bad gateway"), None, bare, bare])

    def handler(request: httpx.Request) -> httpx.Response:
        canned = next(answers)
        if canned is not None:
            return canned
        return httpx.get(f"http://127.0.0.1:{a}{request.url.path}") if request.method == "GET" else \
            httpx.post(f"http://127.0.0.1:{a}{request.url.path}", content=request.content)

    http = HttpSearcher(httpx.Client(base_url="http://fleet", transport=httpx.MockTransport(handler)),
                        attempts=2, backoff_s=0)
    try:
        http.corpus()  # the real replica
        assert http.search("video game", 2).ok  # a proxy's 502 (no header), retried on the replica
        with pytest.raises(SearcherError, match=r"failed after 2 attempts: HTTP 200 without x-drsearch-identity, "
                                                r"but this run started on identity d"):
            http.search("video game", 1)  # a 200 without our header, twice: not a drsearch answer
    finally:
        http.close()


class SwapsReplica(FakeLLM):
    """The default script; when question ``at`` starts, the search server is replaced by one
    on another blocklist at the same address (a replica restarted on the wrong list)."""

    def __init__(self, at: int, database: Path, port: int, log: Path, blocklist: Path) -> None:
        super().__init__({})
        self.at, self.database, self.port, self.log, self.blocklist = at, database, port, log, blocklist
        self.server: Any = None

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.server is not None and body.get("seed") == SEED_BASE + self.at:
            self.server.kill()
            self.server = _serve(self.database, self.port, self.log, self.blocklist)
            self.replacement = self.server
        return super().respond(body)


def test_run_records_a_mixed_fleet_as_infra_error(sample_index: Path, other_blocklist: Path,
                                                  tmp_path: Path) -> None:
    port, log, out = _free_port(), tmp_path / "serve.log", tmp_path / "run"
    fake = SwapsReplica(2, sample_index, port, log, other_blocklist)
    with serve_chat(fake) as url, own_server(sample_index, port, log) as server:
        fake.server = server
        first = identity(port)
        try:
            rc, _, err = run(out, url, ["--search", f"http://127.0.0.1:{port}"], "--ids", *QIDS[:4])
        finally:
            second = identity(port)
            fake.replacement.stop()
    assert rc == 1, err
    records = lines(out)
    assert [r["status"] for r in records] == ["answered", "answered", "infra_error", "infra_error"]
    for r in records[2:]:
        assert r["reason"].startswith("searcher_error: POST /search: the server answered as identity ")
        assert first in r["reason"] and second in r["reason"] and first != second
    manifest = json.loads((out / "run.json").read_text())
    assert f"{manifest['corpus_identity']}:{manifest['blocklist_sha256']}" == first
