"""4 exact shards behind a broker vs one index, on this machine: latency, throughput, bytes.

Builds (or reuses) the ``corpus_gen.py`` corpus of ``--docs`` documents, splits its index into
``--shards`` files (``drsearch shard``), serves the whole index (``drsearch serve``, one
worker) and each shard (one worker each) behind ``drsearch serve --shards`` on 127.0.0.1, then
for each side: every query once in turn (latency p50/p99 of POST /search k=10) and
``--clients`` keep-alive clients for ``--duration`` seconds (throughput). Every broker answer is
compared with the whole index's bytes first (exit 1 on any difference). Prints one JSON object
with the load averages before and after, each server's CPU per request (shards, then the
broker), and the per-chunk costs (file bytes, server RSS) the
sizing in docs/SCALING.md starts from. On one machine the shards share its cores: this measures
the broker's cost, not a fleet's speed-up.

    python benchmarks/shard_bench.py --docs 1000 --shards 4 --clients 16 --duration 10
    python benchmarks/shard_bench.py --passages 100000 --shards 4 --clients 16 --duration 10
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_gen

CACHE = Path(__file__).resolve().parent / ".cache"


def _exe() -> str:
    return shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(args: list[str], log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    proc = subprocess.Popen([_exe(), "serve", *args, "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"serve exited: {log.read_text()[-500:]}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"no /health: {log.read_text()[-500:]}")


def _post(conn: http.client.HTTPConnection, query: str) -> bytes:
    conn.request("POST", "/search", json.dumps({"query": query, "k": 10}),
                 {"content-type": "application/json"})
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise SystemExit(f"HTTP {r.status}: {body[:200]!r}")
    return body


def _latency(port: int, queries: list[str]) -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    took = []
    for q in queries:
        t = time.perf_counter()
        _post(conn, q)
        took.append(time.perf_counter() - t)
    took.sort()
    return {"p50_ms": round(1000 * took[len(took) // 2], 3),
            "p99_ms": round(1000 * took[int(len(took) * 0.99)], 3)}


def _throughput(port: int, queries: list[str], clients: int, duration: float) -> float:
    done = [0] * clients
    stop = time.monotonic() + duration

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port)
        j = i
        while time.monotonic() < stop:
            _post(conn, queries[j % len(queries)])
            done[i] += 1
            j += clients

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return round(sum(done) / (time.monotonic() - t0), 1)


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a process and its children (uvicorn's worker)."""
    total = 0
    for p in [pid, *(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]:
        fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _timed(port: int, queries: list[str], pids: list[int]) -> dict[str, Any]:
    """:func:`_latency`, and each server's CPU ms per request over those sequential requests."""
    before = [_cpu_s(p) for p in pids]
    got: dict[str, Any] = dict(_latency(port, queries))
    got["cpu_ms_per_request"] = [round(1000 * (_cpu_s(p) - b) / len(queries), 2)
                                 for p, b in zip(pids, before, strict=True)]
    return got


def _rss_bytes(pid: int) -> int:
    """RSS of a process and its children (uvicorn's worker)."""
    total = 0
    for p in [pid, *(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def _engine_us(path: Path, queries: list[str]) -> float:
    """CPU µs per complete k=10 search, in this process (each query once to warm, then timed)."""
    from drsearch.index import Engine

    with Engine.open(path) as e:
        for q in queries:
            e.search(q, 10)
        t = time.process_time()
        for q in queries:
            e.search(q, 10)
        return round(1e6 * (time.process_time() - t) / len(queries), 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--passages", type=int, default=0, metavar="N",
                    help="a passage corpus of N passages (wiki-18's shape) instead of --docs documents")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--cache", type=Path, default=CACHE, help="where corpora and indexes are kept")
    a = ap.parse_args(argv)
    cache = a.cache
    load_before = os.getloadavg()
    docs, _ = (corpus_gen.ensure_passages(a.passages, cache=cache) if a.passages
               else corpus_gen.ensure_corpus(a.docs, cache=cache))
    tag = f"p{a.passages}" if a.passages else f"n{a.docs}"
    whole = cache / f"shard-bench-{tag}.sqlite3"
    if not whole.exists():
        subprocess.run([_exe(), "build", str(docs), "--out", str(whole), "--quiet"], check=True)
    out = cache / f"shard-bench-{tag}-s{a.shards}"
    out.mkdir(exist_ok=True)
    subprocess.run([_exe(), "shard", "--database", str(whole), "--shards", str(a.shards), "--out", str(out),
                    "--blocked-docids", "none", "--force"], check=True, stdout=subprocess.DEVNULL)
    files = sorted(out.glob(f"shard-*-of-{a.shards}.sqlite3"))
    queries = corpus_gen.make_queries(corpus_gen.load_sources(), a.queries, corpus_gen.DEFAULT_SEED)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        w_proc, w_port = _serve(["--database", str(whole), "--verify", "none"], out / "whole.log")
        procs.append(w_proc)
        shard_ports = []
        for i, f in enumerate(files):
            p, port = _serve(["--database", str(f), "--verify", "none"], out / f"shard{i}.log")
            procs.append(p)
            shard_ports.append(port)
        b_proc, b_port = _serve(["--shards", *(f"http://127.0.0.1:{p}" for p in shard_ports)],
                                out / "broker.log")
        procs.append(b_proc)
        wc = http.client.HTTPConnection("127.0.0.1", w_port)
        bc = http.client.HTTPConnection("127.0.0.1", b_port)
        differ = sum(_post(wc, q) != _post(bc, q) for q in queries)
        result: dict[str, Any] = {"corpus": tag, "shards": a.shards, "queries": len(queries),
                                  "answers_differing": differ, "cpus": os.cpu_count()}
        import apsw

        chunks = json.loads(apsw.Connection(str(whole)).execute(
            "SELECT value FROM meta WHERE key='chunks'").get)
        result["chunks"] = chunks
        result["whole"] = {**_timed(w_port, queries, [w_proc.pid]),
                           "req_per_s": _throughput(w_port, queries, a.clients, a.duration),
                           "file_bytes": whole.stat().st_size, "rss_bytes": _rss_bytes(w_proc.pid)}
        # cpu_ms_per_request: each shard's server, then the broker's
        result["sharded"] = {**_timed(b_port, queries, [p.pid for p in procs[1:]]),
                             "req_per_s": _throughput(b_port, queries, a.clients, a.duration),
                             "file_bytes": sum(f.stat().st_size for f in files),
                             "rss_bytes": sum(_rss_bytes(p.pid) for p in procs[1:-1]),
                             "broker_rss_bytes": _rss_bytes(b_proc.pid)}
        for side in ("whole", "sharded"):
            result[side]["file_bytes_per_chunk"] = round(result[side]["file_bytes"] / chunks, 1)
            result[side]["rss_bytes_per_chunk"] = round(result[side]["rss_bytes"] / chunks, 1)
        result["engine_us_per_query"] = {"whole": _engine_us(whole, queries),
                                         "shards": [_engine_us(f, queries) for f in files]}
        result["load_before"] = [round(x, 2) for x in load_before]
        result["load_after"] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(result, indent=1))
        return 1 if differ else 0
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(20)


if __name__ == "__main__":
    sys.exit(main())
