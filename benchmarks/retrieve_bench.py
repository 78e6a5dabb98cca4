"""Batch retrieval throughput: `POST /retrieve` batches of 1, 16 and 256 queries against the
same queries sent one at a time to `POST /search` (docs/SERVER.md).

The script starts `drsearch serve` itself (one worker, `--batch-threads` threads for the
batches; default 2, this machine's two cores) on the sample corpus or `--database`, or uses a
running server (`--url`). Queries are document titles of the corpus (agent-style, 3-20 words),
in a seeded order. For each mode it sends requests back to back on one keep-alive connection
for `--seconds` in all (split into `--rounds` interleaved rounds of every mode: the machine's
speed drifts) and reports queries answered per second, each batch size's as a ratio to serial
/search's.

    python benchmarks/retrieve_bench.py                          # sample corpus, 2 threads, 5 s per mode
    python benchmarks/retrieve_bench.py --database X.sqlite3 --seconds 20 --json out.json
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from serving import CACHE, ensure_sample_db, start_server

BATCHES = (1, 16, 256)


def titles(database: Path, seed: int) -> list[str]:
    """Non-empty document titles of the corpus, in a seeded order (the query pool)."""
    from drsearch.index import Engine

    seen: dict[str, None] = {}
    with Engine.open(database) as engine:
        for word in ("the", "and", "of", "to", "in", "a", "is", "for", "on", "with"):
            for h in engine.search(word, 100, with_text=False).hits:
                if h.title.strip():
                    seen.setdefault(" ".join(h.title.split()[:20]), None)
    pool = list(seen)
    random.Random(seed).shuffle(pool)
    if not pool:
        raise SystemExit("retrieve_bench: the corpus has no titled documents to use as queries")
    return pool


def post(conn: http.client.HTTPConnection, path: str, body: dict[str, Any]) -> bytes:
    conn.request("POST", path, json.dumps(body).encode(), {"content-type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit(f"retrieve_bench: {path} answered {r.status}: {data[:300]!r}")
    return data


def measure(base: str, seconds: float, pool: list[str], batch: int | None, topk: int) -> dict[str, Any]:
    """Queries per second for ``seconds``: serial /search when ``batch`` is None, else /retrieve."""
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=120)
    i = requests = queries = nbytes = 0
    t0 = time.perf_counter()
    try:
        while time.perf_counter() - t0 < seconds:
            if batch is None:
                nbytes += len(post(conn, "/search", {"query": pool[i % len(pool)], "k": topk}))
                i, queries = i + 1, queries + 1
            else:
                qs = [pool[(i + j) % len(pool)] for j in range(batch)]
                data = post(conn, "/retrieve", {"queries": qs, "topk": topk, "return_scores": True})
                nbytes += len(data)
                n = len(json.loads(data)["result"])
                if n != batch:
                    raise SystemExit(f"retrieve_bench: {n} result lists for {batch} queries")
                i, queries = i + batch, queries + batch
            requests += 1
        elapsed = time.perf_counter() - t0
    finally:
        conn.close()
    return {"requests": requests, "queries": queries, "seconds": round(elapsed, 3),
            "qps": round(queries / elapsed, 1), "bytes": nbytes}


def total_of(measures: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds of one mode summed: requests, queries, seconds and their queries/s."""
    requests = sum(m["requests"] for m in measures)
    queries = sum(m["queries"] for m in measures)
    seconds = sum(m["seconds"] for m in measures)
    return {"requests": requests, "queries": queries, "seconds": round(seconds, 3),
            "qps": round(queries / seconds, 1),
            "bytes_per_query": round(sum(m["bytes"] for m in measures) / max(1, queries))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database",
                    help="index file (default: the sample corpus, built once into benchmarks/.cache)")
    ap.add_argument("--url",
                    help="a running drsearch serve (then --database names its index, for the queries)")
    ap.add_argument("--batch-threads", type=int, default=2, help="the server's --batch-threads (default 2)")
    ap.add_argument("--seconds", type=float, default=5.0, help="seconds per mode (default 5)")
    ap.add_argument("--rounds", type=int, default=4, help="rounds of all modes, interleaved (default 4)")
    ap.add_argument("--topk", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", metavar="FILE", help="also write the report here")
    args = ap.parse_args(argv)
    if args.seconds <= 0 or not 1 <= args.topk <= 100 or args.batch_threads < 1 or args.rounds < 1:
        print("retrieve_bench: error: need --seconds > 0, --topk in 1..100, --batch-threads >= 1",
              file=sys.stderr)
        return 2
    database = Path(args.database) if args.database else ensure_sample_db()
    pool = titles(database, args.seed)
    server = None
    base = args.url
    if base is None:
        CACHE.mkdir(parents=True, exist_ok=True)
        server = start_server(database, "--batch-threads", str(args.batch_threads), "--verify", "none",
                              "--blocked-docids", "none", log=CACHE / "retrieve_bench_server.log")
        base = server.url
    try:
        measure(base, min(1.0, args.seconds), pool, None, args.topk)  # warm-up: page cache, threads
        # Modes interleaved, round after round: a busy machine's drift hits all of them alike.
        runs: dict[str, list[dict[str, Any]]] = {"serial": [], **{str(b): [] for b in BATCHES}}
        slice_s = args.seconds / args.rounds
        modes: list[int | None] = [None, *BATCHES]
        for r in range(args.rounds):  # each round starts with another mode (what ran before matters)
            for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
                runs["serial" if mode is None else str(mode)].append(
                    measure(base, slice_s, pool, mode, args.topk))
    finally:
        if server is not None:
            server.stop()
    total = {mode: total_of(ms) for mode, ms in runs.items()}
    serial = total.pop("serial")
    report = {"database": database.name, "queries_in_pool": len(pool), "topk": args.topk,
              "batch_threads": args.batch_threads, "cpus": os.cpu_count(), "rounds": args.rounds,
              "load_average": [round(x, 2) for x in os.getloadavg()],
              "serial_search": serial,
              "retrieve": {b: {**m, "ratio_to_serial_search": round(m["qps"] / serial["qps"], 2)}
                           for b, m in total.items()}}
    serial_qps = serial["qps"]
    print(json.dumps(report, indent=2, sort_keys=True))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(f"serial /search: {serial_qps:.1f} queries/s", file=sys.stderr)
    for b, m in report["retrieve"].items():
        print(f"/retrieve batch {b:>3}: {m['qps']:.1f} queries/s = "
              f"{m['ratio_to_serial_search']:.2f} x serial /search", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
