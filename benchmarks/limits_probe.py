"""Probe the request and connection limits of a real `drsearch serve`, as a hostile client would.

Starts ``drsearch serve`` (1 worker, default limits unless flags are passed through with
``--serve-arg``) on 127.0.0.1 and measures, with raw sockets:

- a 32,763-byte query of 6,553 distinct short terms at k=100 (the distinct-term cap);
- the slowest query under the cap: the index's 1,024 shortest terms at k=100, answered
  within the request time limit, and with ``--time-limit 0.5`` (a second server);
- ``/health`` asked on the same (only) worker while that search runs;
- a connection that never sends a byte, and one that drips a header byte every 0.5 s:
  when the server closes them;
- a 10 MB header: what the server answers and how much it read before hanging up;
- ``--max-connections`` + 1 connections: what the extra one gets;
- ``POST /retrieve`` bounds: 256 × "the" at topk 100 (over the result cap), the same at
  topk 10 (at the cap: the largest batch answered) five times, with the worker's resident
  memory before and its peak (``VmHWM``) after; a 150-query batch of slow queries with
  ``--time-limit 1``;
- ``--search-r1``: Search-R1's trainer batches instead, 512 and 1,024 queries at topk 3
  (the corpus' document titles cycled in a seeded order, ``return_scores`` false), three of
  each (on a server with ``--max-batch-queries 1024 --max-batch-results 10240``, the
  default caps doubled), then 1,024 and 512 × "the" at topk 3, and 512 × "0" and × "the" at
  topk 10 (the default caps' largest batch at the default k), with each batch's
  seconds, answer size and the worker's memory now and at its peak.

    python benchmarks/limits_probe.py                       # sample corpus, default limits
    python benchmarks/limits_probe.py --search-r1           # the trainer's batches, default limits
    python benchmarks/limits_probe.py --database X.sqlite3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import sys
import time
from pathlib import Path
from typing import Any

from serving import ensure_sample_db, start_server

from drsearch.server import ServeProcess


def start(database: Path, *args: str) -> tuple[ServeProcess, int]:
    server = start_server(database, "--verify", "none", *args)
    return server, server.port


def stop(server: ServeProcess) -> None:
    server.stop()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=60)


def read_all(s: socket.socket, timeout: float) -> tuple[bytes, float]:
    """What the server sends until it closes, and after how many seconds (inf: never)."""
    t = time.monotonic()
    parts: list[bytes] = []  # joined once: += on bytes is quadratic in a 100 MB answer
    s.settimeout(timeout)
    try:
        while chunk := s.recv(65536):
            parts.append(chunk)
    except TimeoutError:
        return b"".join(parts), float("inf")
    except ConnectionResetError:
        pass
    return b"".join(parts), time.monotonic() - t


def status_of(data: bytes) -> str:
    if not data:
        return "closed, no answer"
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    body = data.partition(b"\r\n\r\n")[2]
    try:
        kind = json.loads(body)["error"]["type"]
    except (ValueError, KeyError, TypeError):
        kind = ""
    return f"{line.split(' ', 2)[1]} {kind}".strip()


def post(port: int, path: str, body: dict[str, Any]) -> tuple[str, float]:
    data = json.dumps(body).encode()
    with connect(port) as s:
        t = time.monotonic()
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(data)}"
                  f"\r\n\r\n".encode() + data)
        reply, _ = read_all(s, 60)
        return status_of(reply), time.monotonic() - t


def short_terms(database: Path, n: int) -> list[str]:
    from drsearch.index import Engine

    with Engine.open(database) as e:
        return [t for (t,) in e._conn.execute(
            "SELECT term FROM terms ORDER BY length(term), df DESC, term LIMIT ?", (n,))]


def probe(database: Path, serve_args: list[str]) -> list[tuple[str, str, float]]:
    rows: list[tuple[str, str, float]] = []
    words = [f"{chr(97 + i // 676 % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i % 26)}{i % 10}"
             for i in range(6553)]
    huge = " ".join(words)[:32763]
    slow = " ".join(short_terms(database, 1024))
    proc, port = start(database, *serve_args)
    try:
        rows.append(("32,763-byte query, 6,553 distinct terms, k=100",
                     *post(port, "/search", {"query": huge, "k": 100})))
        rows.append(("1,024 shortest index terms, k=100", *post(port, "/search", {"query": slow, "k": 100})))
        body = json.dumps({"query": slow, "k": 100}).encode()
        with connect(port) as searching, connect(port) as asking:
            searching.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            time.sleep(0.2)
            t = time.monotonic()
            asking.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            reply, _ = read_all(asking, 60)
            rows.append(("/health while that search runs (same worker)", status_of(reply),
                         time.monotonic() - t))
            read_all(searching, 60)
        with connect(port) as idle:
            reply, after = read_all(idle, 120)
            rows.append(("connection that never sends a byte", status_of(reply), after))
        with connect(port) as drip:
            drip.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            t = time.monotonic()
            reply = b""
            try:
                while time.monotonic() - t < 120:
                    drip.sendall(b"X")
                    if select.select([drip], [], [], 0.5)[0]:
                        reply = drip.recv(65536)
                        break
            except (BrokenPipeError, ConnectionResetError):
                pass
            rows.append(("header dripped one byte per 0.5 s", status_of(reply), time.monotonic() - t))
        with connect(port) as big:
            big.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
            sent, reply = 0, b""
            t = time.monotonic()
            try:
                while sent < 10 << 20:
                    big.sendall(b"a" * 65536)
                    sent += 65536
                    if select.select([big], [], [], 0)[0]:
                        reply = big.recv(65536)
                        break
                else:
                    big.sendall(b"\r\n\r\n")
                    reply, _ = read_all(big, 60)
            except (BrokenPipeError, ConnectionResetError):
                pass
            rows.append((f"10 MB header (server hung up after {sent >> 10} KiB sent)", status_of(reply),
                         time.monotonic() - t))
    finally:
        stop(proc)
    proc, port = start(database, "--max-connections", "8", *serve_args)
    try:
        held = [connect(port) for _ in range(8)]
        time.sleep(0.3)
        with connect(port) as extra:
            reply, after = read_all(extra, 30)
            rows.append(("9th connection with --max-connections 8", status_of(reply), after))
        for s in held:
            s.close()
    finally:
        stop(proc)
    proc, port = start(database, "--time-limit", "0.5", *serve_args)
    try:
        rows.append(("1,024 shortest terms, k=100, --time-limit 0.5",
                     *post(port, "/search", {"query": slow, "k": 100})))
    finally:
        stop(proc)
    return rows


def worker_memory_mib(pid: int) -> tuple[float, float]:
    """A process's resident memory now and its peak so far (VmRSS, VmHWM), in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                  if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def post_sized(port: int, path: str, body: dict[str, Any]) -> tuple[str, int, float]:
    """Like :func:`post`, plus the size of the answer's body in bytes."""
    data = json.dumps(body).encode()
    with connect(port) as s:
        t = time.monotonic()
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(data)}"
                  f"\r\n\r\n".encode() + data)
        reply, _ = read_all(s, 120)
        return status_of(reply), len(reply.partition(b"\r\n\r\n")[2]), time.monotonic() - t


def worker_pid(port: int) -> int:
    """The pid of the worker that answers on ``port`` (its ``x-drsearch-worker`` header)."""
    with connect(port) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        head = read_all(s, 30)[0].partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    return int(head.split("x-drsearch-worker:", 1)[1].split()[0])


def retrieve_probe(database: Path, serve_args: list[str]) -> list[tuple[str, str, float]]:
    """The /retrieve bounds (module docstring), one worker."""
    rows: list[tuple[str, str, float]] = []
    proc, port = start(database, *serve_args)
    try:
        worker = worker_pid(port)
        rss, _ = worker_memory_mib(worker)
        rows.append((f"worker resident memory at start: {rss:.0f} MiB", "", 0.0))
        status, size, seconds = post_sized(port, "/retrieve", {"queries": ["the"] * 256, "topk": 100})
        rows.append(("/retrieve 256 x 'the', topk 100 (25,600 results)", status, seconds))
        for i in range(5):
            status, size, seconds = post_sized(port, "/retrieve", {"queries": ["the"] * 256, "topk": 10})
            rss, peak = worker_memory_mib(worker)
            rows.append((f"/retrieve 256 x 'the', topk 10 #{i + 1}: {size / 1e6:.1f} MB, "
                         f"RSS {rss:.0f} MiB, peak {peak:.0f} MiB", status, seconds))
    finally:
        stop(proc)
    slow = " ".join(short_terms(database, 1024))
    proc, port = start(database, "--time-limit", "1", *serve_args)
    try:
        status, size, seconds = post_sized(port, "/retrieve", {"queries": [slow] * 150, "topk": 10})
        rows.append(("/retrieve 150 x the 1,024 shortest terms, topk 10, --time-limit 1", status, seconds))
    finally:
        stop(proc)
    return rows


def search_r1_probe(database: Path, serve_args: list[str]) -> list[tuple[str, str, float]]:
    """Search-R1's trainer batches (module docstring), one worker."""
    import random

    from drsearch.index import Engine

    with Engine.open(database) as e:
        pool = sorted({str(t) for (t,) in e._conn.execute("SELECT title FROM documents") if str(t).strip()})
    random.Random(1).shuffle(pool)
    rows: list[tuple[str, str, float]] = []
    # the default caps answer 512 queries; 1,024 are measured with the caps doubled
    proc, port = start(database, "--max-batch-queries", "1024", "--max-batch-results", "10240", *serve_args)
    try:
        worker = worker_pid(port)
        rss, _ = worker_memory_mib(worker)
        rows.append((f"worker resident memory at start: {rss:.0f} MiB", "", 0.0))
        for n in (512, 1024):
            queries = [pool[i % len(pool)] for i in range(n)]
            for i in range(3):
                status, size, seconds = post_sized(port, "/retrieve", {"queries": queries, "topk": 3})
                rss, peak = worker_memory_mib(worker)
                rows.append((f"/retrieve {n} titles, topk 3 #{i + 1}: {size / 1e6:.1f} MB, "
                             f"RSS {rss:.0f} MiB, peak {peak:.0f} MiB", status, seconds))
        for n, query, topk in ((1024, "the", 3), (512, "the", 3), (512, "0", 10), (512, "the", 10)):
            status, size, seconds = post_sized(port, "/retrieve", {"queries": [query] * n, "topk": topk})
            rss, peak = worker_memory_mib(worker)
            rows.append((f"/retrieve {n} x {query!r}, topk {topk}: {size / 1e6:.1f} MB, RSS {rss:.0f} MiB, "
                         f"peak {peak:.0f} MiB", status, seconds))
    finally:
        stop(proc)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database", type=Path, help="index file (default: the sample corpus)")
    ap.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                    help="extra `drsearch serve` argument (repeat)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--retrieve-only", action="store_true", help="only the /retrieve probes")
    ap.add_argument("--search-r1", action="store_true",
                    help="only Search-R1's batches: 512 and 1,024 queries at topk 3")
    args = ap.parse_args(argv)
    database = args.database or ensure_sample_db()
    if args.search_r1:
        rows = search_r1_probe(database, args.serve_arg)
    else:
        rows = [] if args.retrieve_only else probe(database, args.serve_arg)
        rows += retrieve_probe(database, args.serve_arg)
    load = os.getloadavg()[0]
    print(f"{database.name}; serve {' '.join(args.serve_arg) or '(default limits)'}; "
          f"load average {load:.1f} on {os.cpu_count()} cores")
    print(f"{'probe':<62} {'answer':<28} {'seconds':>8}")
    for what, answer, seconds in rows:
        print(f"{what:<62} {answer:<28} {seconds:>8.3f}")
    if args.json:
        args.json.write_text(json.dumps({"database": database.name, "load_average": load,
                                         "results": [{"probe": w, "answer": a, "seconds": s}
                                                     for w, a, s in rows]},
                                        indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
