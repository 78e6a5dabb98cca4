"""Quick latency probes on the indexes ``search_bench.py`` built (no rebuild, ~1-2 min).

Two measurements the full benchmark does not print on their own:

- ``--order shuffle|rotate``: only the interleaved latency part of ``search_bench.py``
  (``interleaved()``, same engines, warm-up and rounds), in either task order, with the
  ours/tantivy ratios. Used to compare the two orders on one index.
- ``--stages``: where one of our ranked searches (k=10, no text) spends its time warm, and
  right after tantivy has run a ranked and a snippet search of the same query (caches and
  TLB evicted by the other engine): parse, postings fetch, ranking, hit metadata.

Usage::

    python benchmarks/latency_probe.py [--docs 30318] [--seed 1] [--order rotate] [--no-bm25s]
    python benchmarks/latency_probe.py --stages
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import corpus_gen
import numpy as np
import search_bench as sb


def order_probe(work: Path, queries: Sequence[str], order: str, bm25s: bool, tokenizer: str) -> None:
    meta = sb.Meta(work / "ours.sqlite3")
    engines: list[Any] = [sb.Ours(work / "ours.sqlite3"), sb.Tantivy(work / "tantivy", tokenizer, meta)]
    if bm25s:
        engines.append(sb.Bm25s(work / "bm25s", meta))
    lat = sb.interleaved(engines, queries, 20, 3, snippet_peer=True, order=order)
    print(f"order {order} (seed {sb.ORDER_SEED}), engines {', '.join(e.name for e in engines)}")
    print(f"{'operation':<24}" + "".join(f"{e.name + ' p50':>14}" for e in engines) + f"{'ours/tantivy':>14}")
    for op, per in lat.items():
        row = f"{op:<24}" + "".join(f"{per[e.name].pct(50) * 1e3:>14.3f}" if e.name in per else f"{'':>14}"
                                    for e in engines)
        if "ours" in per and "tantivy" in per:
            row += f"{per['ours'].pct(50) / per['tantivy'].pct(50):>13.2f}x"
        print(row)


def stage_probe(work: Path, queries: Sequence[str], tokenizer: str) -> None:
    from drsearch.index import Engine

    e = Engine.open(work / "ours.sqlite3")
    tv = sb.Tantivy(work / "tantivy", tokenizer, sb.Meta(work / "ours.sqlite3"))
    print(f"ours: ranked k=10 (search without text), scorer {e.stats()['scorer']}; p50 ms over "
          f"{len(queries)} queries (second of two passes)")
    print(f"{'condition':<16}{'parse':>9}{'postings':>10}{'rank':>9}{'metadata':>10}{'total':>9}")
    for condition in ("warm", "after tantivy"):
        times: dict[str, list[float]] = {s: [] for s in ("parse", "postings", "rank", "metadata", "total")}
        for rnd in range(2):
            for q in queries:
                if condition == "after tantivy":
                    tv.ranked(q, 10)
                    tv.complete(q, 10, snippet=True)
                t0 = time.perf_counter()
                parsed = e.parse(q)
                t1 = time.perf_counter()
                terms = e._postings(parsed, time.monotonic() + 10)
                t2 = time.perf_counter()
                ranked = e.scorer.rank(terms, 10, e._blocked_chunks, e._scratch(), time.monotonic() + 10)
                t3 = time.perf_counter()
                e._doc_table().get(e._chunk_doc[[c for c, _ in ranked]].tolist())
                t4 = time.perf_counter()
                if rnd:
                    for s, v in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True):
                        times[s].append(v)
        print(f"{condition:<16}" + "".join(f"{np.median(v) * 1e3:>{w}.3f}"
                                           for v, w in zip(times.values(), (9, 10, 9, 10, 9), strict=True)))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus_gen.add_scale_args(ap)
    ap.add_argument("--order", choices=("shuffle", "rotate"), default="shuffle")
    ap.add_argument("--no-bm25s", action="store_true", help="interleave ours and tantivy only")
    ap.add_argument("--stages", action="store_true", help="the stage probe instead")
    args = ap.parse_args(argv)
    work = corpus_gen.bench_dir(args)
    if not (work / "ours.sqlite3").is_file() or not (work / "tantivy").is_dir():
        raise SystemExit(f"{work}: run search_bench.py with the same --docs/--seed first")
    _, queries = corpus_gen.ensure_queries(args.queries, args.seed)
    if args.stages:
        stage_probe(work, queries, args.tokenizer)
    else:
        order_probe(work, queries, args.order, not args.no_bm25s, args.tokenizer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
