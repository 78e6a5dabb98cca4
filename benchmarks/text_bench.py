"""Chunk text stored once (schema version 4) against stored twice (version 2): file size, build
time and search latency on the benchmark corpus (``corpus_gen.py``, its default vocabulary).

Each ``--docs`` size is built both ways (``BuildSettings(chunk_text="spans" | "stored")``, two
build threads), then every query runs on both engines interleaved (the order alternating query
by query), complete hits (chunk text and snippet) and ranked only, k = 10; the ratios
version 4 / version 2 of p50 and p99 are printed with the load averages. Same inputs, same
files: the build is deterministic.

``--compare codes``: coded posting lists (schema version 5) against raw ones (version 4)
instead: each size built once (version 5), then copied as version 4 (every list decoded to its
float64 impacts, the terms rows without code width and table size: the file a version-4 build
wrote); the file and its tables' sizes (SQLite's dbstat), then ranked search k=10 on both,
interleaved (each query's median over the rounds), v5/v4 p50 and p99 and the median of the
per-query ratios, with the load averages.

Usage::

    python benchmarks/text_bench.py --docs 2000,10000 [--queries 300] [--rounds 3] [--compare codes]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import apsw
import corpus_gen
import numpy as np

from drsearch.index import BuildSettings, Engine, build, read_jsonl
from drsearch.index.version4 import write_version4

_TABLES = ("postings", "doc_texts", "chunks_fts_data", "terms")


def _built(corpus: Path, out: Path, chunk_text: str) -> float:
    t = time.perf_counter()
    settings = BuildSettings(threads=2, chunk_text=chunk_text)  # type: ignore[arg-type]
    build(read_jsonl(corpus), out, settings)
    return time.perf_counter() - t


def _latencies(paths: dict[str, Path], queries: list[str], rounds: int,
               with_text: bool) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in paths}
    engines = {name: Engine.open(p) for name, p in paths.items()}
    try:
        for q in queries[:20]:  # warm-up
            for e in engines.values():
                e.search(q, 10, with_text=with_text)
        order = list(engines)
        for r in range(rounds):
            for i, q in enumerate(queries):
                for name in (order if (i + r) % 2 else order[::-1]):
                    t = time.perf_counter()
                    engines[name].search(q, 10, with_text=with_text)
                    times[name].append(time.perf_counter() - t)
    finally:
        for e in engines.values():
            e.close()
    return times


def _table_mib(path: Path) -> dict[str, float]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {t: float(conn.execute("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ?", (t,)).get)
                / 2**20 for t in _TABLES}
    finally:
        conn.close()


def _compare_codes(n: int, corpus: Path, queries: list[str], rounds: int) -> None:
    with tempfile.TemporaryDirectory() as td:
        paths = {"v4": Path(td) / "v4.sqlite3", "v5": Path(td) / "v5.sqlite3"}
        secs = _built(corpus, paths["v5"], "spans")
        write_version4(paths["v5"], paths["v4"])
        sizes = {name: p.stat().st_size / 2**20 for name, p in paths.items()}
        tables = {name: _table_mib(p) for name, p in paths.items()}
        print(f"\n--docs {n}: build v5 {secs:.1f} s; file v4 {sizes['v4']:.1f} MiB, v5 {sizes['v5']:.1f} MiB "
              f"({sizes['v5'] / sizes['v4']:.3f}x)")
        for t in _TABLES:
            print(f"  {t}: v4 {tables['v4'][t]:.1f} MiB, v5 {tables['v5'][t]:.1f} MiB")
        times = _latencies(paths, queries, rounds, False)
        # each query's median over the rounds (_latencies appends round by round)
        med = {name: np.median(np.array(v).reshape(rounds, len(queries)), axis=0) * 1e6
               for name, v in times.items()}
        p = {name: np.percentile(v, [50, 99]) for name, v in med.items()}
        print(f"  ranked only k=10 (per-query medians of {rounds} rounds): v4 p50 {p['v4'][0]:.0f} us "
              f"p99 {p['v4'][1]:.0f} us; v5 p50 {p['v5'][0]:.0f} us p99 {p['v5'][1]:.0f} us; v5/v4 p50 "
              f"{p['v5'][0] / p['v4'][0]:.3f}x p99 {p['v5'][1] / p['v4'][1]:.3f}x, median per-query ratio "
              f"{float(np.median(med['v5'] / med['v4'])):.3f}x")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", default="2000,10000")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=corpus_gen.DEFAULT_SEED)
    ap.add_argument("--compare", choices=("text", "codes"), default="text",
                    help="text: chunk text stored once (v4) vs twice (v2); "
                         "codes: coded lists (v5) vs raw (v4)")
    args = ap.parse_args(argv)
    _, queries = corpus_gen.ensure_queries(args.queries, args.seed)
    print(f"load average at start: {os.getloadavg()}")
    for n in (int(x) for x in args.docs.split(",")):
        corpus, _ = corpus_gen.ensure_corpus(n, args.seed)
        if args.compare == "codes":
            _compare_codes(n, corpus, queries, args.rounds)
            print(f"  load average: {os.getloadavg()}")
            continue
        with tempfile.TemporaryDirectory() as td:
            paths = {"v2": Path(td) / "v2.sqlite3", "v4": Path(td) / "v4.sqlite3"}
            secs = {name: _built(corpus, p, "stored" if name == "v2" else "spans")
                    for name, p in paths.items()}
            sizes = {name: p.stat().st_size for name, p in paths.items()}
            print(f"\n--docs {n}: file v2 {sizes['v2'] / 2**20:.1f} MiB, v4 {sizes['v4'] / 2**20:.1f} MiB "
                  f"({sizes['v4'] / sizes['v2']:.3f}x); build v2 {secs['v2']:.1f} s, v4 {secs['v4']:.1f} s "
                  f"({secs['v4'] / secs['v2']:.3f}x)")
            for with_text in (True, False):
                t = _latencies(paths, queries, args.rounds, with_text)
                p = {name: np.percentile(np.array(v) * 1e6, [50, 99]) for name, v in t.items()}
                print(f"  {'complete hits' if with_text else 'ranked only  '} k=10: "
                      f"v2 p50 {p['v2'][0]:.0f} us p99 {p['v2'][1]:.0f} us; "
                      f"v4 p50 {p['v4'][0]:.0f} us p99 {p['v4'][1]:.0f} us; "
                      f"v4/v2 p50 {p['v4'][0] / p['v2'][0]:.3f}x p99 {p['v4'][1] / p['v2'][1]:.3f}x")
        print(f"  load average: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
