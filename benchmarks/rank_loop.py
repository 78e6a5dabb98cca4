"""A steady loop of ranked searches on one index, for a profiler to sample.

Runs every query once (warm-up), then the whole list again and again for ``--seconds``, with
``Engine.search(q, k, with_text=False)`` (the ranked search ``search_bench.py`` times), and
prints how many searches ran and their mean time. Profile it with perf::

    perf record -g -o perf.data python benchmarks/rank_loop.py --index ours.sqlite3 \
        --queries queries-...-n300-s1.json --seconds 15
    perf report -i perf.data --no-children --sort symbol --stdio

(docs/BENCHMARKS.md's profile of the 1× normal queries: ``--index`` the ``ours.sqlite3`` of a
``search_bench.py --docs 30318`` run, ``--queries`` the cache's ``queries-…-n300-s1.json``.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def load_queries(path: Path) -> list[str]:
    """A JSON list of query strings (the benchmark cache's queries files)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not data or not all(isinstance(q, str) for q in data):
        raise ValueError(f"{path}: expected a non-empty JSON list of query strings")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, required=True, help="a drsearch index")
    ap.add_argument("--queries", type=Path, required=True, help="JSON list of query strings")
    ap.add_argument("--seconds", type=float, default=15.0, help="how long to loop (default 15)")
    ap.add_argument("--k", type=int, default=10)
    args = ap.parse_args(argv)
    if args.seconds <= 0 or args.k < 1:
        ap.error("--seconds must be positive and --k at least 1")
    try:
        queries = load_queries(args.queries)
    except (OSError, ValueError) as exc:
        print(f"rank_loop.py: {exc}", file=sys.stderr)
        return 2
    from drsearch.index import Engine

    with Engine.open(args.index) as engine:
        for q in queries:
            engine.search(q, args.k, with_text=False)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            for q in queries:
                engine.search(q, args.k, with_text=False)
            n += len(queries)
        elapsed = time.perf_counter() - t0
    print(f"{n} searches (k={args.k}) in {elapsed:.1f} s: {elapsed / n * 1e6:.1f} µs each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
