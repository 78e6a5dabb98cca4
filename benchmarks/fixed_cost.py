"""The per-query fixed cost: one-term and two-word queries, ours against PISA's engine-only call.

Runs the ``single`` (one word: frequent, mid and rare in turn) and ``pair-rare`` (a word and a
rare name) query classes (``corpus_gen.make_short_queries``) on the indexes ``search_bench.py``
built for a configuration (``--docs``, ``--vocabulary``; build them first with a search_bench
run), interleaved as search_bench interleaves its engines: ours (``Engine.search``, ranked,
k=10) against PISA-q8 MaxScore's bare ``retrieve`` on a query parsed beforehand
(``PisaBare``). Prints p50 and p99 of each class (and of the single class's three kinds of
word), their ratios, the 1-minute load average before and after, and which drsearch code ran
(``PYTHONPATH`` may point at another checkout's build: the before/after of a change, each
against the same PISA call).

``--stages``: also where a one-term search's time goes (``time.perf_counter_ns`` around the
engine's stages: parse, the term rows and lists, the rest: ranking and hits).

Usage::

    python benchmarks/fixed_cost.py --docs 10000 [--rounds 5] [--json out.json] [--stages]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import corpus_gen
import numpy as np
import search_bench as sb

KINDS = ("frequent", "mid", "rare")  # the single class's words, in turn (make_short_queries)


def _summary(per_query: Sequence[Sequence[float]]) -> dict[str, float]:
    """p50 and p99 in microseconds of each query's median."""
    typical = np.array([np.median(s) for s in per_query]) * 1e6
    return {"p50": float(np.percentile(typical, 50)), "p99": float(np.percentile(typical, 99))}


def stage_times(engine: Any, queries: Sequence[str], reps: int = 5) -> dict[str, float]:
    """Median microseconds of a ranked k=10 search's stages over ``queries`` (each query's best
    of ``reps``): ``parse``, ``postings`` (term rows and lists) and the search whole."""
    clock = time.perf_counter_ns
    deadline = time.monotonic() + 3600

    def best(fn: Callable[[str], object], q: str) -> float:
        times = []
        for _ in range(reps):
            t0 = clock()
            fn(q)
            times.append(clock() - t0)
        return min(times) / 1e3

    parsed = {q: engine.parse(q) for q in queries}
    out = {"search": [best(lambda q: engine.search(q, 10, with_text=False), q) for q in queries],
           "parse": [best(engine.parse, q) for q in queries],
           "postings": [best(lambda q: engine._postings(parsed[q], deadline), q) for q in queries]}
    med = {k: float(np.median(v)) for k, v in out.items()}
    med["rest"] = med["search"] - med["parse"] - med["postings"]
    return med


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=corpus_gen.DR256_DOCS)
    ap.add_argument("--seed", type=int, default=corpus_gen.DEFAULT_SEED)
    ap.add_argument("--tokenizer", choices=("porter", "unicode61"), default="porter")
    corpus_gen.add_vocabulary_arg(ap)
    ap.add_argument("--queries", type=int, default=corpus_gen.DEFAULT_ENTITY_QUERIES,
                    help="queries of each class (default 100)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--stages", action="store_true", help="also time a one-term search's stages")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    if args.vocabulary not in ("web", "large") or min(args.queries, args.rounds) < 1 or args.warmup < 0:
        ap.error("--vocabulary web or large; --queries and --rounds positive, --warmup >= 0")
    vocab = corpus_gen.Vocabulary(args.vocabulary)
    work = corpus_gen.bench_dir_for(args.docs, args.seed, args.tokenizer, vocab)
    ours_path, pisa_path = work / "ours.sqlite3", work / "pisa"
    if not ours_path.is_file() or not pisa_path.is_dir():
        print(f"fixed_cost: no indexes in {work}: build them with search_bench.py --docs "
              f"{args.docs} --vocabulary {args.vocabulary}", file=sys.stderr)
        return 2
    pisa, why = sb.load_pisathon()
    if pisa is None:
        print(f"fixed_cost: {why}", file=sys.stderr)
        return 2
    corpus, meta = corpus_gen.ensure_corpus(args.docs, args.seed, vocab=vocab)
    _, classes = corpus_gen.ensure_short_queries(corpus, meta, args.queries, args.seed)
    queries = [q for qs in classes.values() for q in qs]
    ours = sb.Ours(ours_path)
    q8 = sb.Pisa(pisa_path, ours_path, sb.Meta(ours_path), "maxscore", quantized=True)
    bare = sb.PisaBare(q8, queries)
    load = [os.getloadavg()[0]]
    lat = sb.interleaved([ours, bare], queries, args.warmup, args.rounds, snippet_peer=False)
    load.append(os.getloadavg()[0])
    k10 = lat["ranked_k10"]
    import drsearch

    result: dict[str, Any] = {"drsearch": str(Path(drsearch.__file__).parent), "docs": args.docs,
                              "vocabulary": args.vocabulary, "rounds": args.rounds,
                              "load_1min": load, "classes": {}}
    print(f"drsearch from {result['drsearch']}; {args.docs:,} docs, vocabulary {args.vocabulary}; "
          f"median of {args.rounds} rounds; 1-min load {load[0]:.2f} before, {load[1]:.2f} after")
    print(f"{'class':<18}{'ours p50':>10}{'p99':>9}{'PISA-q8 bare p50':>18}{'p99':>9}"
          f"{'ratio p50':>11}{'p99':>7}   (us)")
    at = 0
    for cls, qs in classes.items():
        span = range(at, at + len(qs))
        at += len(qs)
        groups = [(cls, list(span))]
        if cls == "single":
            groups += [(f"  {kind}", list(span)[i::3]) for i, kind in enumerate(KINDS)]
        for name, idx in groups:
            o = _summary([k10["ours"].per_query[i] for i in idx])
            b = _summary([k10[bare.name].per_query[i] for i in idx])
            ratio = {p: o[p] / b[p] for p in ("p50", "p99")}
            result["classes"][name.strip()] = {"ours": o, "pisa_q8_bare": b, "ratio": ratio}
            print(f"{name:<18}{o['p50']:>10.1f}{o['p99']:>9.1f}{b['p50']:>18.1f}{b['p99']:>9.1f}"
                  f"{ratio['p50']:>10.2f}x{ratio['p99']:>6.2f}x")
    if args.stages:
        stages = {kind: stage_times(ours.engine, classes["single"][i::3]) for i, kind in enumerate(KINDS)}
        result["stages_us"] = stages
        print("one-term search stages (us, median of each query's best of 5): "
              + "; ".join(f"{kind}: " + ", ".join(f"{s} {v:.2f}" for s, v in st.items())
                          for kind, st in stages.items()))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
