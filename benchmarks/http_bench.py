"""The HTTP path against the engine alone, on the same cores, interleaved.

Three rates, each round measuring every one of them in turn (the order rotated round by round:
the machine's speed drifts, and a slow minute should fall on all of them alike):

- **engine, k=10**: complete searches (``Engine.search(q, 10)``: ranking, texts, snippets) per
  second by ``--workers`` independent processes of one thread each (``search_bench.throughput``),
  the engine alone on the same cores;
- **``POST /search`` k=10**: ``--clients`` keep-alive connections (64) sending the same queries
  back to back to ``drsearch serve --workers 2``; requests answered per second, latency p50/p99;
- **``POST /retrieve``**: Search-R1's training-step batch (``--batch`` 512 queries, ``topk`` 3)
  sent back to back on one connection (a trainer waits for its batch), queries answered per
  second, against **engine, k=3**: the engine alone on the same 512 queries with k=3, again
  ``--workers`` processes. The server answers one batch on one worker, its queries on
  ``--batch-threads`` threads (both cores).

The report gives each rate's median over ``--rounds`` (3), the ratios HTTP / engine (goals:
``/search`` >= 0.8, ``/retrieve`` >= 0.9) and the load averages at the start and after each
round. Every HTTP answer must be 200; the first answer of each query is compared with the
engine's own result (same docids in the same order), or the script fails.

``--baseline SRC`` serves the same index a second time from another tree's ``src`` directory
(``PYTHONPATH``; its C kernel built in place, e.g. a ``git archive`` of the commit before a
change plus the built kernel) and measures its two endpoints in the same rounds, rotated with
the others: a change's before and after under the same load, with their ratios. ``--floor``
measures, in the same rounds, a bare ASGI app under the same uvicorn, httptools and uvloop
answering the same requests with a pre-encoded answer of the median size
(``http_floor_app.py``): the stack's own cost a request, the part of the gap that is not ours.

    python benchmarks/http_bench.py                        # 20,000-document corpus, 3 rounds of 8 s per rate
    python benchmarks/http_bench.py --database X.sqlite3 --seconds 10 --json out.json
    python benchmarks/http_bench.py --baseline /tmp/before/src   # before/after, interleaved
    python benchmarks/http_bench.py --floor                # and the bare stack's cost a request

The queries are ``corpus_gen``'s (``search_bench.py``'s normal queries). The load generator is
the minimal asyncio client of ``load_test.py`` (about 0.1 core at full load), in this process:
it shares the two cores with the server, as any client on the same machine would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import corpus_gen
from load_test import Connection, run_loop
from search_bench import throughput
from serving import CACHE, start_server

GOALS = {"search": 0.8, "retrieve": 0.9}


def ensure_index(docs: int, seed: int) -> Path:
    """The corpus_gen corpus of ``docs`` documents, built once into benchmarks/.cache."""
    path = CACHE / f"http-bench-n{docs}-s{seed}.sqlite3"
    if not path.exists():
        from drsearch.index import build, read_jsonl

        corpus, _ = corpus_gen.ensure_corpus(docs, seed)
        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        build(read_jsonl(corpus), tmp)
        tmp.rename(path)
    return path


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def server_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of the server's processes (supervisor and workers)."""
    import psutil

    total = 0.0
    root = psutil.Process(pid)
    for p in [root, *root.children(recursive=True)]:
        try:
            if "drsearch.server.deepcheck" in " ".join(p.cmdline()):
                continue
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total




# -- HTTP phases ------------------------------------------------------------------------------
async def _search_clients(host: str, port: int, payloads: list[bytes], clients: int,
                          seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    bad: list[int] = []
    counter = [0]
    deadline = time.perf_counter() + seconds

    async def client() -> None:
        conn = Connection(host, port, 60.0)
        try:
            while time.perf_counter() < deadline:
                i = counter[0]
                counter[0] += 1
                t0 = time.perf_counter()
                status, _, _ = await conn.request("/search", payloads[i % len(payloads)])
                latencies.append(time.perf_counter() - t0)
                if status != 200:
                    bad.append(status)
        finally:
            conn.close()

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - start
    if bad:
        raise SystemExit(f"http_bench: /search answered {len(bad)} non-200 statuses, e.g. {bad[0]}")
    latencies.sort()
    return {"rate": len(latencies) / elapsed, "requests": len(latencies),
            "p50_ms": latencies[len(latencies) // 2] * 1e3,
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3}


async def _retrieve_client(host: str, port: int, payload: bytes, queries: int,
                           seconds: float) -> dict[str, Any]:
    conn = Connection(host, port, 120.0)
    latencies: list[float] = []
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < seconds or not latencies:
            t0 = time.perf_counter()
            status, _, body = await conn.request("/retrieve", payload)
            latencies.append(time.perf_counter() - t0)
            if status != 200:
                raise SystemExit(f"http_bench: /retrieve answered {status}: {body[:300]!r}")
    finally:
        conn.close()
    elapsed = time.perf_counter() - start
    return {"rate": len(latencies) * queries / elapsed, "batches": len(latencies),
            "batch_ms": statistics.median(latencies) * 1e3}


def check_answers(url: str, database: Path, queries: list[str], batch: list[str], topk: int) -> list[bytes]:
    """Each /search and the /retrieve batch answer what the engine answers (docids, order);
    returns the /search bodies."""
    from drsearch.index import Engine

    host, port = _host_port(url)

    async def fetch() -> tuple[list[bytes], bytes]:
        conn = Connection(host, port, 120.0)
        try:
            bodies = []
            for q in queries:
                bodies.append((await conn.request("/search", json.dumps({"query": q, "k": 10}).encode()))[2])
            retrieve = (await conn.request("/retrieve", json.dumps(
                {"queries": batch, "topk": topk, "return_scores": True}).encode()))[2]
            return bodies, retrieve
        finally:
            conn.close()

    bodies, retrieve = run_loop(fetch())
    with Engine.open(database) as engine:
        for q, body in zip(queries, bodies, strict=True):
            got = [h["docid"] for h in json.loads(body)["results"]]
            if got != [h.docid for h in engine.search(q, 10).hits]:
                raise SystemExit(f"http_bench: /search of {q!r} differs from the engine's answer")
        lists = json.loads(retrieve)["result"]
        for q, items in zip(batch, lists, strict=True):
            if [i["document"]["id"] for i in items] != [h.docid for h in engine.search(q, topk).hits]:
                raise SystemExit(f"http_bench: /retrieve of {q!r} differs from the engine's answer")
    return bodies


class FloorServer:
    """``http_floor_app.py`` under uvicorn (httptools, uvloop, no access log, as ``drsearch
    serve``) with ``workers`` processes on a free 127.0.0.1 port, answering ``body``."""

    def __init__(self, body: bytes, workers: int) -> None:
        CACHE.mkdir(parents=True, exist_ok=True)
        body_file = CACHE / "http_bench_floor_body.json"
        body_file.write_bytes(body)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        with open(CACHE / "http_bench_floor.log", "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--app-dir", str(Path(__file__).resolve().parent),
                 "http_floor_app:app", "--host", "127.0.0.1", "--port", str(self.port),
                 "--workers", str(workers), "--http", "httptools", "--loop", "uvloop", "--no-access-log",
                 "--log-level", "warning"],
                env={**os.environ, "DRSEARCH_FLOOR_BODY": str(body_file)}, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        self._wait_ready(workers)

    def _wait_ready(self, workers: int) -> None:
        import psutil

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise SystemExit(f"http_bench: the floor server exited ({CACHE / 'http_bench_floor.log'})")
            live = workers == 1 or len(psutil.Process(self.pid).children()) >= workers
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    if live:
                        time.sleep(0.5 if workers > 1 else 0)  # the last worker's loop started
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise SystemExit("http_bench: the floor server did not start within 60 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait()


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


# -- the run ----------------------------------------------------------------------------------
def one_round(r: int, url: str, server_pid: int, database: Path, queries: list[str], batch: list[str],
              args: argparse.Namespace, baseline: tuple[str, int] | None = None,
              floor: tuple[str, int] | None = None) -> dict[str, Any]:
    """Every rate once, the order rotated by ``r``; ``baseline``: the (url, pid) of the baseline
    tree's server, whose two endpoints are measured too (``search_base``, ``retrieve_base``);
    ``floor``: the (url, pid) of the floor server, sent the /search requests (``floor``)."""
    search_payloads = [json.dumps({"query": q, "k": 10}).encode() for q in queries]
    retrieve_payload = json.dumps({"queries": batch, "topk": args.topk}).encode()
    def engine(extra: dict[str, Any], qs: list[str]) -> dict[str, Any]:
        t = throughput("ours", database, extra, qs, args.workers, args.seconds)
        # answers per CPU-second of all its processes together (cores_busy: CPU-s per wall-s)
        return {"rate": t["qps"], "cpu_rate": t["qps"] / max(1e-9, t["cores_busy"])}

    def http(pid: int, phase: Any, per_answer: int) -> dict[str, Any]:
        cpu0 = server_cpu_seconds(pid)
        out: dict[str, Any] = run_loop(phase)
        answers = out.get("requests", out.get("batches", 0)) * per_answer
        out["cpu_rate"] = answers / max(1e-9, server_cpu_seconds(pid) - cpu0)
        return out

    def endpoints(url: str, pid: int, suffix: str) -> dict[str, Any]:
        host, port = _host_port(url)
        return {
            "search" + suffix: lambda: http(pid, _search_clients(host, port, search_payloads, args.clients,
                                                                 args.seconds), 1),
            "retrieve" + suffix: lambda: http(pid, _retrieve_client(host, port, retrieve_payload, len(batch),
                                                                    args.seconds), len(batch)),
        }

    served = endpoints(url, server_pid, "")
    steps = {"engine_k10": lambda: engine({}, queries), "search": served["search"],
             "engine_batch": lambda: engine({"k": args.topk}, batch), "retrieve": served["retrieve"],
             **(endpoints(*baseline, "_base") if baseline else {})}
    if floor is not None:
        steps["floor"] = endpoints(*floor, "_floor")["search_floor"]
    names = list(steps)
    names = names[r % len(names):] + names[:r % len(names)]
    out: dict[str, Any] = {"load_start": loadavg()}
    for name in names:
        out[name] = steps[name]()
        print(f"  round {r + 1} {name:<13} {out[name]['rate']:>9,.1f}/s  "
              f"{out[name]['cpu_rate']:>9,.1f} per CPU-second", flush=True)
    out["load_end"] = loadavg()
    return out


def summary(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def med(name: str, key: str = "rate") -> float:
        return statistics.median(r[name][key] for r in rounds)

    def ratio(name: str, of: str, key: str = "rate") -> float:
        return statistics.median(r[name][key] / r[of][key] for r in rounds)

    s = {name: med(name) for name in ("engine_k10", "search", "engine_batch", "retrieve")}
    s["search_ratio"] = statistics.median(r["search"]["rate"] / r["engine_k10"]["rate"] for r in rounds)
    s["retrieve_ratio"] = statistics.median(r["retrieve"]["rate"] / r["engine_batch"]["rate"]
                                            for r in rounds)
    s["search_cpu_ratio"] = statistics.median(r["search"]["cpu_rate"] / r["engine_k10"]["cpu_rate"]
                                              for r in rounds)
    s["retrieve_cpu_ratio"] = statistics.median(r["retrieve"]["cpu_rate"] / r["engine_batch"]["cpu_rate"]
                                                for r in rounds)
    s["search_p50_ms"], s["search_p99_ms"] = med("search", "p50_ms"), med("search", "p99_ms")
    s["retrieve_batch_ms"] = med("retrieve", "batch_ms")
    if "search_base" in rounds[0]:
        for name, of in (("search_base", "engine_k10"), ("retrieve_base", "engine_batch")):
            s[name] = med(name)
            s[name + "_ratio"] = ratio(name, of)
            s[name + "_cpu_ratio"] = ratio(name, of, "cpu_rate")
        s["search_base_p50_ms"] = med("search_base", "p50_ms")
        s["search_base_p99_ms"] = med("search_base", "p99_ms")
        s["retrieve_base_batch_ms"] = med("retrieve_base", "batch_ms")
    if "floor" in rounds[0]:
        s["floor"], s["floor_cpu_rate"] = med("floor"), med("floor", "cpu_rate")
        # CPU milliseconds a request: the server's, the engine's alone, the bare stack's
        s["search_cpu_ms"] = 1e3 / med("search", "cpu_rate")
        s["engine_k10_cpu_ms"] = 1e3 / med("engine_k10", "cpu_rate")
        s["floor_cpu_ms"] = 1e3 / s["floor_cpu_rate"]
    return s


def report(s: dict[str, Any], load_start: list[float], rounds: list[dict[str, Any]],
           args: argparse.Namespace) -> str:
    def verdict(ratio: float, goal: float) -> str:
        return f"goal >= {goal}: {'PASS' if ratio >= goal else 'MISS'}"

    loads = " ".join(f"{r['load_end'][0]:.1f}" for r in rounds)
    rest = s.get("search_cpu_ms", 0.0) - s.get("engine_k10_cpu_ms", 0.0) - s.get("floor_cpu_ms", 0.0)
    busy = max(load_start[0], *(r["load_end"][0] for r in rounds)) > (os.cpu_count() or 1)
    caveat = ("the machine was busier than its cores: the wall ratios are the scheduler's shares "
              "(more server threads, more share), not the HTTP path; the ratios per CPU-second are "
              "what a quiet machine's wall ratios approach") if busy else ""
    return "\n".join([*([caveat] if caveat else []),
        f"load averages at start (1/5/15 min): {load_start[0]:.2f} / {load_start[1]:.2f} / "
        f"{load_start[2]:.2f} on {os.cpu_count()} CPUs; 1-min after each round: {loads}",
        f"engine alone, k=10, {args.workers} processes: {s['engine_k10']:,.1f} searches/s (median of "
        f"{len(rounds)})",
        f"POST /search k=10, {args.clients} clients, {args.workers} workers: {s['search']:,.1f} req/s, "
        f"p50 {s['search_p50_ms']:.1f} ms, p99 {s['search_p99_ms']:.1f} ms",
        f"  /search / engine: {s['search_ratio']:.2f} ({verdict(s['search_ratio'], GOALS['search'])}); "
        f"per CPU-second of the server's processes: {s['search_cpu_ratio']:.2f}",
        f"engine alone, k={args.topk}, the batch's {args.batch} queries, {args.workers} processes: "
        f"{s['engine_batch']:,.1f} searches/s",
        f"POST /retrieve, {args.batch} queries, topk {args.topk}, one connection, {args.batch_threads} "
        f"batch threads: {s['retrieve']:,.1f} queries/s ({s['retrieve_batch_ms']:.0f} ms a batch)",
        f"  /retrieve / engine: {s['retrieve_ratio']:.2f} "
        f"({verdict(s['retrieve_ratio'], GOALS['retrieve'])}); per CPU-second: {s['retrieve_cpu_ratio']:.2f}",
        *([f"baseline {args.baseline}: POST /search {s['search_base']:,.1f} req/s, p50 "
           f"{s['search_base_p50_ms']:.1f} ms, p99 {s['search_base_p99_ms']:.1f} ms; / engine "
           f"{s['search_base_ratio']:.2f}, per CPU-second {s['search_base_cpu_ratio']:.2f}",
           f"baseline {args.baseline}: POST /retrieve {s['retrieve_base']:,.1f} queries/s "
           f"({s['retrieve_base_batch_ms']:.0f} ms a batch); / engine {s['retrieve_base_ratio']:.2f}, "
           f"per CPU-second {s['retrieve_base_cpu_ratio']:.2f}"] if "search_base" in s else []),
        *([f"floor (http_floor_app.py, a {args.floor_bytes:,}-byte answer): {s['floor']:,.1f} req/s; CPU a "
           f"request: /search {s['search_cpu_ms']:.3f} ms = the engine alone {s['engine_k10_cpu_ms']:.3f} ms "
           f"+ the bare stack {s['floor_cpu_ms']:.3f} ms + the rest {rest:.3f} ms"] if "floor" in s else []),
    ])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--database", type=Path, help="index to serve (default: a corpus_gen corpus)")
    ap.add_argument("--docs", type=int, default=20_000, help="corpus_gen documents without --database")
    ap.add_argument("--seed", type=int, default=corpus_gen.DEFAULT_SEED)
    ap.add_argument("--queries", type=int, default=corpus_gen.DEFAULT_QUERIES)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=8.0, help="per rate per round")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=512, help="queries per /retrieve batch")
    ap.add_argument("--topk", type=int, default=3)
    ap.add_argument("--batch-threads", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write every round and the summary here")
    ap.add_argument("--baseline", type=Path, metavar="SRC",
                    help="also measure a server of another tree's src directory (its kernel built), "
                         "interleaved: before/after a change under the same load")
    ap.add_argument("--floor", action="store_true",
                    help="also measure a bare ASGI app answering a pre-encoded /search answer "
                         "(the stack's own cost)")
    args = ap.parse_args(argv)
    if min(args.rounds, args.clients, args.workers, args.batch, args.topk, args.batch_threads) < 1:
        ap.error("--rounds, --clients, --workers, --batch, --topk and --batch-threads must be positive")
    # SIGTERM ends the run through the finally below, which stops the server it started
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    load_start = loadavg()
    database = args.database or ensure_index(args.docs, args.seed)
    if not database.is_file():
        ap.error(f"{database}: no such index file")
    if args.baseline is not None and not (args.baseline / "drsearch" / "__init__.py").is_file():
        ap.error(f"--baseline {args.baseline}: not a src directory holding drsearch/")
    _, queries = corpus_gen.ensure_queries(args.queries, args.seed)
    batch = [queries[i % len(queries)] for i in range(args.batch)]
    # --verify none: no background deep check during the run (its one-off cost at start is
    # measured on its own, docs/SERVER.md "--verify")
    flags = ("--verify", "none", "--batch-threads", str(args.batch_threads), "--max-batch-queries",
             str(args.batch), "--max-batch-results", str(max(2560, args.batch * args.topk)))
    server = start_server(database, *flags, workers=args.workers, log=CACHE / "http_bench_server.log")
    base = floor = None
    try:
        if args.baseline is not None:
            base = start_server(database, *flags, workers=args.workers, log=CACHE / "http_bench_baseline.log",
                                env={"PYTHONPATH": str(args.baseline.resolve())})
        for srv in (server, base):
            if srv is not None:
                bodies = check_answers(srv.url, database, queries, batch, args.topk)
        if args.floor:
            body = sorted(bodies, key=len)[len(bodies) // 2]
            args.floor_bytes = len(body)
            floor = FloorServer(body, args.workers)
        print(f"{database} ({database.stat().st_size / (1 << 20):,.0f} MiB), {len(queries)} queries; "
              f"load averages at start {load_start}", flush=True)
        rounds = [one_round(r, server.url, server.pid, database, queries, batch, args,
                            (base.url, base.pid) if base is not None else None,
                            (floor.url, floor.pid) if floor is not None else None)
                  for r in range(args.rounds)]
    finally:
        server.stop()
        for other in (base, floor):
            if other is not None:
                other.stop()
    s = summary(rounds)
    print(report(s, load_start, rounds, args))
    if args.json:
        args.json.write_text(json.dumps({"load_start": load_start, "rounds": rounds, "summary": s,
                                         "args": {k: str(v) for k, v in vars(args).items()}},
                                        indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
