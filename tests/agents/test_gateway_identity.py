"""A gateway that strips ``x-drsearch-identity`` does not hide a mixed fleet.

Two real ``drsearch serve`` replicas on *different corpora* (the sample and Cranfield)
behind a real round-robin HTTP proxy on 127.0.0.1 (a few lines of asyncio below) that drops
the identity header from every response. ``drsearch run --search PROXY`` must end as an
infrastructure failure (exit 1, the status table naming it), never exit 0 with the answers
of two corpora mixed under the first replica's identity:

- by default, because every answer without the header is refused once ``/health``'s body
  named an identity (retried, then ``infra_error``);
- with ``--identity-check-every N`` (the mode for such gateways), because a periodic
  ``/health`` reaches the other replica and its body names another identity.

The same proxy over two replicas of one corpus is usable with ``--identity-check-every``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from drsearch.agents import HttpSearcher, SearcherError
from drsearch.dev.chat import FakeLLM, serve_chat
from drsearch.server import ServeProcess

from ..helpers import free_port
from .conftest import BLOCKED
from .test_infra_failures import QIDS, lines, run

STRIPPED = b"x-drsearch-identity"


class StrippingRoundRobin:
    """An HTTP/1.1 reverse proxy: request i goes to ``ports[i % n]``; the response comes back
    without its ``x-drsearch-identity`` header (as some gateways rewrite headers)."""

    def __init__(self, ports: list[int]) -> None:
        self.ports, self.sent, self.port = ports, 0, free_port()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", self.port))
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines_ = head.split(b"\r\n")
            length = next((int(h.split(b":", 1)[1]) for h in lines_ if h.lower().startswith(b"content-length:")), 0)
            body = await reader.readexactly(length)
            kept = [h for h in lines_[1:] if h and not h.lower().startswith((b"connection:", b"host:"))]
            port = self.ports[self.sent % len(self.ports)]
            self.sent += 1
            up_r, up_w = await asyncio.open_connection("127.0.0.1", port)
            up_w.write(b"\r\n".join([lines_[0], f"host: 127.0.0.1:{port}".encode(), b"connection: close",
                                     *kept, b"", b""]) + body)
            await up_w.drain()
            answer = await up_r.read()  # the replica closes after one answer (connection: close)
            up_w.close()
            top, _, rest = answer.partition(b"\r\n\r\n")
            headers = [h for h in top.split(b"\r\n") if not h.lower().startswith(STRIPPED)]
            writer.write(b"\r\n".join(headers) + b"\r\n\r\n" + rest)
            await writer.drain()
        finally:
            writer.close()

    def __enter__(self) -> StrippingRoundRobin:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


@pytest.fixture(scope="module")
def replicas(sample_index: Path, cran_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    """``sample`` (its blocklist), ``sample2`` (the same), ``cran`` (another corpus): their ports."""
    log = tmp_path_factory.mktemp("gateway")
    procs = {"sample": ServeProcess(sample_index, "--blocked-docids", str(BLOCKED), log=log / "a.log"),
             "sample2": ServeProcess(sample_index, "--blocked-docids", str(BLOCKED), log=log / "b.log"),
             "cran": ServeProcess(cran_index, log=log / "c.log")}
    try:
        yield {name: p.start().port for name, p in procs.items()}
    finally:
        for p in procs.values():
            p.stop()


def identity(port: int) -> str:
    return httpx.get(f"http://127.0.0.1:{port}/health").headers["x-drsearch-identity"]


def test_the_proxy_strips_the_header_and_alternates(replicas: dict[str, int]) -> None:
    with StrippingRoundRobin([replicas["sample"], replicas["cran"]]) as proxy:
        bodies = [httpx.get(f"{proxy.url}/health") for _ in range(2)]
    assert all("x-drsearch-identity" not in r.headers and r.status_code == 200 for r in bodies)
    assert bodies[0].json()["corpus"]["identity"] != bodies[1].json()["corpus"]["identity"]


def run_through(proxy: str, out: Path, *extra: str) -> tuple[int, str, str]:
    with serve_chat(FakeLLM({})) as url:
        return run(out, url, ["--search", proxy], "--ids", *QIDS[:3], *extra)


def test_default_a_run_behind_a_stripping_gateway_fails_as_infrastructure(
        replicas: dict[str, int], tmp_path: Path) -> None:
    with StrippingRoundRobin([replicas["sample"], replicas["cran"]]) as proxy:
        rc, table, err = run_through(proxy.url, tmp_path / "run")
    assert rc == 1, (table, err)
    assert "infrastructure failure" in table and "3 infrastructure failure(s)" in table
    records = lines(tmp_path / "run")
    assert [r["status"] for r in records] == ["infra_error"] * 3
    for r in records:
        assert "without x-drsearch-identity" in r["reason"] and identity(replicas["sample"]) in r["reason"]
        assert r["final_answer"] is None


def test_health_checks_catch_the_mixed_fleet_behind_a_stripping_gateway(
        replicas: dict[str, int], tmp_path: Path) -> None:
    with StrippingRoundRobin([replicas["sample"], replicas["cran"]]) as proxy:
        rc, table, err = run_through(proxy.url, tmp_path / "run", "--identity-check-every", "1")
    assert rc == 1, (table, err)
    assert "infrastructure failure(s)" in table
    failed = [r for r in lines(tmp_path / "run") if r["status"] == "infra_error"]
    assert failed
    assert all(identity(replicas["cran"]) in r["reason"] and "GET /health" in r["reason"] for r in failed)


def test_health_checks_let_a_uniform_fleet_through_a_stripping_gateway(
        replicas: dict[str, int], tmp_path: Path) -> None:
    with StrippingRoundRobin([replicas["sample"], replicas["sample2"]]) as proxy:
        rc, table, err = run_through(proxy.url, tmp_path / "run", "--identity-check-every", "1")
        assert proxy.sent > 3 * 2 + 1  # searches, opens, the start's /health, and the checks
    assert rc == 0, (table, err)
    assert [r["status"] for r in lines(tmp_path / "run")] == ["answered"] * 3
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert f"{manifest['corpus_identity']}:{manifest['blocklist_sha256']}" == identity(replicas["sample"])


def test_health_checks_are_not_aliased_by_round_robin(replicas: dict[str, int]) -> None:
    """Checks after *every* answer would always land on the same replica of two; random gaps don't."""
    with StrippingRoundRobin([replicas["sample"], replicas["cran"]]) as proxy:
        for seed in range(8):
            # several schedules of checks: each must catch it
            http = HttpSearcher(httpx.Client(base_url=proxy.url), health_check_every=1, seed=seed)
            http.corpus()
            with pytest.raises(SearcherError, match="GET /health: a replica names identity"):
                for _ in range(40):
                    http.search("flow", 2)
            http.close()


def test_cli_refuses_identity_check_without_search(tmp_path: Path) -> None:
    rc, _, err = run(tmp_path / "run", "http://127.0.0.1:9/v1", ["--database", str(tmp_path / "x.sqlite3")],
                     "--identity-check-every", "2")
    assert rc == 2 and "--identity-check-every goes with --search" in err and len(err.strip().splitlines()) == 1
