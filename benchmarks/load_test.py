"""Load test of `drsearch serve`: N concurrent simulated agents over loopback.

Each agent holds one keep-alive HTTP/1.1 connection and sends, back to back, requests from
a fixed, seeded mix: searches (k uniform in 5..100, agent-style queries built from the
corpus's titles) and opens (by docid or by URL, some paged). The run is bounded by
--duration and --max-requests and talks to 127.0.0.1 only. In the same run the script
measures the in-process engine on the same request mix (one thread, before and after the
HTTP phase, interleaved because this machine's speed drifts) and prints the ratio
HTTP ops/s : in-process ops/s (target >= 0.7 with 2 workers).

It also reports latency percentiles per operation, errors, RSS/PSS/USS per worker (the
index is memory-mapped: its pages are shared between workers, so PSS << RSS), and byte-
identity of repeated requests across workers. --kill-worker SIGKILLs one worker mid-run and
reports how many requests failed until uvicorn's replacement answered.

    python benchmarks/load_test.py                           # sample corpus, 64 agents, 2 workers, 20 s
    python benchmarks/load_test.py --database X.sqlite3 --workers 4 --duration 60 --kill-worker
    python benchmarks/load_test.py --url http://127.0.0.1:8000 --database X.sqlite3   # a running server

The client is a minimal asyncio HTTP/1.1 client (Content-Length bodies only, which is all
the server sends): httpx costs ~0.3 ms of CPU per request, which on a 2-core machine would
measure the client rather than the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import sys
import time
import zlib
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from serving import CACHE, ensure_sample_db, get_json, start_server

REPO = Path(__file__).resolve().parents[1]
OPERATORS = ['"', "?", " NOT ", " OR ", ":", "*", " -", "(", " site:", " 2019"]


# -- request mix ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Op:
    kind: str  # "search" | "open"
    body: dict[str, Any]

    @property
    def payload(self) -> bytes:
        return json.dumps(self.body).encode()


def corpus_rows(database: Path, limit: int = 5000) -> list[tuple[str, str, str]]:
    """(docid, url, title) of up to `limit` documents, read-only."""
    uri = f"file:{database.resolve()}?mode=ro&immutable=1"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        return list(conn.execute("SELECT docid, url, title FROM documents ORDER BY id LIMIT ?", (limit,)))


def agent_query(rng: random.Random, titles: list[str], vocab: list[str]) -> str:
    """A 3-20 word agent-style query: title words, content words, sometimes operators."""
    words = rng.choice(titles).split()[: rng.randint(2, 12)] or ["search"]
    words += rng.sample(vocab, k=min(len(vocab), rng.randint(1, 8)))
    rng.shuffle(words)
    q = " ".join(words)
    if rng.random() < 0.3:
        q = q + rng.choice(OPERATORS) + rng.choice(vocab)
    if rng.random() < 0.15:
        q = f'"{q}"'
    return q


def make_ops(database: Path, n: int, seed: int, open_share: float) -> list[Op]:
    rows = corpus_rows(database)
    rng = random.Random(seed)
    titles = [t for _, _, t in rows if t.strip()] or ["sample query"]
    vocab = sorted({w.strip(".,:;!?()\"'").lower() for t in titles for w in t.split()} - {""})
    ops = []
    for _ in range(n):
        if rng.random() >= open_share:
            ops.append(Op("search", {"query": agent_query(rng, titles, vocab), "k": rng.randint(5, 100)}))
            continue
        docid, url, _ = rng.choice(rows)
        body: dict[str, Any] = {"docid": docid} if rng.random() < 0.8 else {"url": url}
        if rng.random() < 0.3:
            body |= {"offset": rng.choice([0, 1000, 5000]), "length": 4000}
        ops.append(Op("open", body))
    return ops


# -- in-process engine ----------------------------------------------------------------------
def inprocess_rate(database: Path, ops: list[Op], seconds: float) -> float:
    """Ops per second of the engine itself, one thread, on the same mix (bodies built too)."""
    from drsearch.contract import DocumentNotFoundError
    from drsearch.index import Engine

    with Engine.open(database) as engine:
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            op = ops[n % len(ops)]
            if op.kind == "search":
                engine.search(op.body["query"], op.body["k"]).to_dict()
            else:
                try:
                    doc = engine.open_document(docid=op.body.get("docid"), url=op.body.get("url"))
                    doc.to_dict(op.body.get("offset", 0), op.body.get("length"))
                except DocumentNotFoundError:
                    pass
            n += 1
        return n / (time.perf_counter() - start)


# -- a minimal HTTP/1.1 client ----------------------------------------------------------------
class Connection:
    """One keep-alive connection; request() returns (status, worker pid, body)."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, path: str, payload: bytes) -> tuple[int, int, bytes]:
        if self.writer is None:
            await self._connect()
        assert self.reader is not None and self.writer is not None
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
        return await asyncio.wait_for(self._response(), self.timeout)

    async def _response(self) -> tuple[int, int, bytes]:
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionResetError("server closed the connection")
        status = int(status_line.split(b" ", 2)[1])
        length, worker, close = 0, 0, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"x-drsearch-worker":
                worker = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        body = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, worker, body


# -- the HTTP phase -----------------------------------------------------------------------------
@dataclass
class Record:
    kind: str
    t: float  # seconds since the start, at completion
    latency: float
    status: int  # 0: connection failure or timeout
    worker: int


@dataclass
class Run:
    records: list[Record] = field(default_factory=list)
    bodies: dict[int, int] = field(default_factory=dict)  # op index -> crc32 of first body
    mismatches: int = 0
    kill: dict[str, Any] = field(default_factory=dict)


async def agent(host: str, port: int, ops: list[Op], counter: list[int], run: Run, start: float,
                deadline: float, max_requests: int, timeout: float) -> None:
    conn = Connection(host, port, timeout)
    try:
        while time.perf_counter() < deadline and counter[0] < max_requests:
            i = counter[0]
            counter[0] += 1
            op = ops[i % len(ops)]
            t0 = time.perf_counter()
            try:
                status, worker, body = await conn.request("/" + op.kind, op.payload)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                conn.close()
                status, worker, body = 0, 0, b""
            t1 = time.perf_counter()
            run.records.append(Record(op.kind, t1 - start, t1 - t0, status, worker))
            if status == 200:
                crc = zlib.crc32(body)
                first = run.bodies.setdefault(i % len(ops), crc)
                run.mismatches += first != crc
    finally:
        conn.close()


async def killer(run: Run, start: float, at: float, deadline: float, server_pid: int | None,
                 probe: tuple[str, int, bytes], grace: float) -> None:
    """SIGKILL one worker `at` seconds in; note when its replacement starts and first answers.

    The load may end before uvicorn's supervisor (it pings every worker in turn, each ping up to
    its health-check timeout) has spawned and warmed the replacement, on a busy 2-core machine
    easily a few seconds. So after the load the killer keeps watching, for at most `grace`
    seconds after the kill, and sends its own probe searches (not counted in the load's
    records) to see the new worker answer.
    """
    await asyncio.sleep(at)
    seen = {r.worker for r in run.records if r.worker}
    live = worker_pids(server_pid, seen)
    if not live:
        run.kill = {"error": "no worker pid known"}
        return
    victim = max(live)
    before = set(live)
    # A replacement is a worker alive at none of these: a worker that was up but had not yet
    # answered (seen holds only pids that answered) is not the one uvicorn started after it.
    known = seen | before
    os.kill(victim, signal.SIGKILL)
    t_kill = time.perf_counter()
    killed_at = t_kill - start
    run.kill = {"pid": victim, "at_s": round(killed_at, 3)}
    host, port, payload = probe
    while (now_abs := time.perf_counter()) < max(deadline, t_kill + grace):
        await asyncio.sleep(0.05)
        now = time.perf_counter() - start
        if "replacement_pid" not in run.kill:
            new = [p for p in worker_pids(server_pid, set()) if p not in before] if server_pid else []
            if new:
                run.kill["replacement_pid"] = new[0]
                run.kill["replacement_started_after_s"] = round(now - killed_at, 3)
        fresh = [r for r in run.records if r.worker and r.worker not in known and r.t >= killed_at]
        if fresh:
            run.kill.setdefault("replacement_pid", fresh[0].worker)
            run.kill["replacement_answered_after_s"] = round(fresh[0].t - killed_at, 3)
            return
        if now_abs >= deadline:  # the load is over: probe on a new connection each time
            conn = Connection(host, port, 5.0)
            try:
                status, worker, _ = await conn.request("/search", payload)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                status, worker = 0, 0
            finally:
                conn.close()
            if status == 200 and worker and worker not in known:
                run.kill.setdefault("replacement_pid", worker)
                run.kill["replacement_answered_after_s"] = round(time.perf_counter() - t_kill, 3)
                run.kill["answered_first_to"] = "probe after the load"
                return
    run.kill["replacement_missing_after_s"] = round(time.perf_counter() - t_kill, 3)


async def http_phase(host: str, port: int, ops: list[Op], agents: int, duration: float,
                     max_requests: int, timeout: float, kill_at: float | None,
                     server_pid: int | None, grace: float) -> tuple[Run, float]:
    run, counter = Run(), [0]
    start = time.perf_counter()
    deadline = start + duration
    watcher = None
    if kill_at is not None:
        search = next(op for op in ops if op.kind == "search")
        watcher = asyncio.ensure_future(
            killer(run, start, kill_at, deadline, server_pid, (host, port, search.payload), grace))
    await asyncio.gather(*(agent(host, port, ops, counter, run, start, deadline, max_requests, timeout)
                           for _ in range(agents)))
    elapsed = time.perf_counter() - start  # the load's own time, without the killer's grace
    if watcher is not None:
        await watcher
    return run, elapsed


def run_loop(coro: Any) -> Any:
    """asyncio.run, on uvloop when it is installed (a cheaper client leaves more CPU to the server)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


# -- processes --------------------------------------------------------------------------------
def worker_pids(server_pid: int | None, seen: set[int]) -> list[int]:
    """Live worker pids: children of the server we started, else pids seen in responses."""
    import psutil

    if server_pid is not None:
        pids = []
        try:
            kids = psutil.Process(server_pid).children(recursive=True)
        except psutil.Error:
            kids = []
        for kid in kids:
            try:  # one child gone or a zombie (its cmdline unreadable) says nothing of the others
                # uvicorn's workers are multiprocessing spawns; skip its resource tracker
                if "--multiprocessing-fork" in kid.cmdline() and kid.status() != psutil.STATUS_ZOMBIE:
                    pids.append(kid.pid)
            except psutil.Error:
                continue
        if pids:
            return pids
    return [p for p in seen if psutil.pid_exists(p)]


def memory(pids: list[int]) -> list[dict[str, Any]]:
    import psutil

    out = []
    for pid in sorted(pids):
        try:
            m = psutil.Process(pid).memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        out.append({"pid": pid, "rss_mib": round(m.rss / 2**20, 1), "pss_mib": round(m.pss / 2**20, 1),
                    "uss_mib": round(m.uss / 2**20, 1)})
    return out


# -- report -----------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def summarise(run: Run, elapsed: float) -> dict[str, Any]:
    recs = run.records
    out: dict[str, Any] = {"requests": len(recs), "elapsed_s": round(elapsed, 2),
                           "throughput_rps": round(len(recs) / elapsed, 1)}
    out["errors"] = {"http_4xx_5xx": sum(r.status >= 400 for r in recs),
                     "connection": sum(r.status == 0 for r in recs)}
    for kind in ("search", "open"):
        lat = [r.latency * 1000 for r in recs if r.kind == kind and r.status == 200]
        out[kind] = {"requests": sum(r.kind == kind for r in recs),
                     "ok": len(lat),
                     "rps": round(sum(r.kind == kind for r in recs) / elapsed, 1),
                     "latency_ms": {q: round(pct(lat, p), 2) for q, p in
                                    (("p50", .5), ("p95", .95), ("p99", .99), ("max", 1.0))}}
    out["workers_answering"] = len({r.worker for r in recs if r.worker})
    out["determinism"] = {"repeated_ops": sum(1 for r in recs if r.status == 200) - len(run.bodies),
                          "byte_mismatches": run.mismatches}
    if run.kill:
        k = dict(run.kill)
        if "at_s" in k:
            end = k["at_s"] + k.get("replacement_answered_after_s", elapsed)
            k["failed_while_down"] = sum(1 for r in recs if r.status != 200 and k["at_s"] <= r.t <= end)
            k["failed_after_kill"] = sum(1 for r in recs if r.status != 200 and r.t >= k["at_s"])
        out["kill_worker"] = k
    return out


def print_report(rep: dict[str, Any]) -> None:
    h = rep["http"]
    print(f"load: {rep['agents']} agents for {h['elapsed_s']} s against {rep['server']} "
          f"({rep['workers']} workers)")
    print(f"  requests {h['requests']} = {h['throughput_rps']} req/s; errors: {h['errors']}; "
          f"workers answering: {h['workers_answering']}; load generator used {h['client_cpu_share']} cores")
    for kind in ("search", "open"):
        k = h[kind]
        lat = k["latency_ms"]
        print(f"  {kind:6} {k['requests']:>7} ({k['rps']} /s)  latency ms p50 {lat['p50']}  p95 {lat['p95']}"
              f"  p99 {lat['p99']}  max {lat['max']}")
    ip = rep["inprocess"]
    print(f"  in-process engine, same mix, 1 thread: {ip['ops_per_s']} ops/s "
          f"(before {ip['before']}, after {ip['after']})")
    print(f"  HTTP / in-process throughput ratio: {rep['ratio']} (target >= 0.7 with 2 workers)")
    print(f"  determinism: {h['determinism']}")
    for m in rep["memory"]:
        print(f"  worker {m['pid']}: RSS {m['rss_mib']} MiB, PSS {m['pss_mib']} MiB, USS {m['uss_mib']} MiB")
    if "kill_worker" in h:
        print(f"  kill-worker: {h['kill_worker']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database", type=Path, help="index file (default: the sample corpus, built on demand)")
    ap.add_argument("--url", help="a running server on loopback (default: start one)")
    ap.add_argument("--workers", type=int, default=2, help="workers of the server started here")
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of HTTP load (max 600)")
    ap.add_argument("--max-requests", type=int, default=2_000_000)
    ap.add_argument("--inprocess-seconds", type=float, default=5.0, help="each of the two engine runs")
    ap.add_argument("--open-share", type=float, default=0.3, help="fraction of requests that are opens")
    ap.add_argument("--timeout", type=float, default=30.0, help="per-request timeout (s)")
    ap.add_argument("--seed", type=int, default=20260811)
    ap.add_argument("--kill-worker", action="store_true", help="SIGKILL one worker mid-run")
    ap.add_argument("--kill-at", type=float, default=0.4, help="when, as a fraction of --duration")
    ap.add_argument("--replacement-grace", type=float, default=30.0,
                    help="seconds after the kill to wait for the replacement worker, even past the load")
    ap.add_argument("--json", type=Path, help="also write the report here")
    args = ap.parse_args(argv)
    duration = min(max(args.duration, 0.5), 600.0)
    database = (args.database or ensure_sample_db()).resolve()
    ops = make_ops(database, 1500, args.seed, args.open_share)  # repeats: checks bytes across workers

    before = inprocess_rate(database, ops, args.inprocess_seconds)
    server = None
    if args.url:
        base = args.url.rstrip("/")
    else:
        CACHE.mkdir(parents=True, exist_ok=True)
        server = start_server(database, workers=args.workers, log=CACHE / "load_server.log")
        base = server.url
    try:
        parts = urlsplit(base)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        if host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("127."):
            raise SystemExit("load tests talk to loopback only")
        get_json(base + "/health")
        kill_at = duration * args.kill_at if args.kill_worker else None
        cpu0 = time.process_time()
        run, elapsed = run_loop(http_phase(host, port, ops, args.agents, duration, args.max_requests,
                                           args.timeout, kill_at, server.pid if server else None,
                                           args.replacement_grace))
        client_cpu = time.process_time() - cpu0
        seen = {r.worker for r in run.records if r.worker}
        mem = memory(worker_pids(server.pid if server else None, seen))
        server_stats = get_json(base + "/stats")["server"]
    finally:
        if server is not None:
            server.stop()
    after = inprocess_rate(database, ops, args.inprocess_seconds)
    http = summarise(run, elapsed)
    http["client_cpu_share"] = round(client_cpu / elapsed, 2)  # cores the load generator itself used
    inproc = (before + after) / 2
    rep = {"agents": args.agents, "workers": args.workers if server else "?", "server": base,
           "database": str(database), "http": http,
           "inprocess": {"ops_per_s": round(inproc, 1), "before": round(before, 1), "after": round(after, 1)},
           "ratio": round(http["throughput_rps"] / inproc, 2), "memory": mem,
           "server_stats": {"requests": server_stats["requests"], "errors": server_stats["errors"],
                            "workers": server_stats["workers"]}}
    print_report(rep)
    if args.json:
        args.json.write_text(json.dumps(rep, indent=2) + "\n")
    failed = http["errors"]["http_4xx_5xx"] + http["errors"]["connection"]
    return 0 if failed == 0 or args.kill_worker else 1


if __name__ == "__main__":
    sys.exit(main())
