"""The traversal over 8-bit quantised impacts against the exact kernels, on the benchmark's lists.

Reads each query's lists from a benchmark index (``search_bench.py`` builds it; the web
vocabulary and its query classes by default), quantises them once with the index's unit
(``drsearch.index.quantized``), and times, interleaved query by query in a seeded random order
per query and round, each query's median over ``--rounds``:

- kernel only, on the same in-memory lists (sparse lists; clamped terms left out, as in
  ``kernel_ab.py``): ``c-auto`` (what the engine's default calls: ``rank_maxscore`` with block
  maxima or ``rank_blocks``, ``Scorer._prunes``), ``rank_maxscore`` with block maxima, and
  ``rank_quant``; every answer is checked equal first;
- the engine's ``rank`` (parse, term rows, lists, ranking; no hits): the default against
  ``EngineOptions(quantized=True)`` with its lists already quantised (the option's steady
  state), answers checked equal.

It prints p50/p99 per class and k, the ratios quant/exact (median of per-query ratios and of
the p50s), and the 1-min load average before and after.

Usage::

    python benchmarks/quant_ab.py --docs 2000 [--rounds 5] [--classes normal,web]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import corpus_gen
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from kernel_ab import BLOCK_POSTINGS, auto_prunes, read_lists  # noqa: E402

from drsearch.index import Engine, native  # noqa: E402
from drsearch.index.engine import EngineOptions  # noqa: E402
from drsearch.index.memory import hugepage_zeros  # noqa: E402
from drsearch.index.quantized import QuantLists  # noqa: E402
from drsearch.index.scoring import BLOCK_ROWS  # noqa: E402
from drsearch.index.terms import quantize  # noqa: E402

Call = Callable[[int], Any]


def timed(fns: dict[str, Call], n: int, rounds: int) -> dict[str, np.ndarray]:
    """Each configuration's per-query median time (µs), interleaved in a seeded order."""
    times = {name: np.zeros((n, rounds)) for name in fns}
    names = list(fns)
    rng = np.random.default_rng(20261207)
    for r in range(rounds):
        for i in range(n):
            for j in rng.permutation(len(names)):
                t0 = time.perf_counter()
                fns[names[j]](i)
                times[names[j]][i, r] = time.perf_counter() - t0
    return {name: np.median(t, axis=1) * 1e6 for name, t in times.items()}


def report(title: str, res: dict[str, np.ndarray], base: str, quant: str) -> None:
    print(f"{title}{'p50':>{48 - len(title)}}{'p99':>9}")
    for name, us in res.items():
        print(f"  {name:<44}{np.percentile(us, 50):9.1f}{np.percentile(us, 99):9.1f}")
    b, a = res[base], res[quant]
    print(f"  {quant}/{base}: per-query median {np.median(a / b):.3f}, p50 "
          f"{np.percentile(a, 50) / np.percentile(b, 50):.3f}, p99 "
          f"{np.percentile(a, 99) / np.percentile(b, 99):.3f}")


def kernel_configs(lists: list[list[Any]], quant: list[list[Any]], unit: float, chunk_doc: Any,
                   k: int) -> dict[str, Call]:
    kernels = native.native_kernels()
    n_rows = len(chunk_doc) - 1
    buf = hugepage_zeros(8 * BLOCK_ROWS).view(np.float64)
    out_c, out_s = np.empty(n_rows + 1, dtype=np.int64), np.empty(n_rows + 1)

    def blockmax(i: int) -> list[tuple[int, float]]:
        ls = lists[i]
        n = kernels.rank_maxscore([t[0] for t in ls], [t[1] for t in ls], np.array([t[2] for t in ls]),
                                  n_rows, None, chunk_doc, k, -1.0, buf, out_c, out_s, 10.0, None,
                                  [t[3] for t in ls], BLOCK_POSTINGS)[0]
        return list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True))

    def blocks(i: int) -> list[tuple[int, float]]:
        ls = lists[i]
        n = kernels.rank_blocks([t[0] for t in ls], [t[1] for t in ls], n_rows, None, chunk_doc, k,
                                -1.0, buf, out_c, out_s, 10.0)[0]
        return list(zip(out_c[:n].tolist(), out_s[:n].tolist(), strict=True))

    def auto(i: int) -> list[tuple[int, float]]:
        return blockmax(i) if auto_prunes(lists[i], k, n_rows) else blocks(i)

    def rq(i: int) -> list[tuple[int, float]]:
        return kernels.rank_quant(quant[i], unit, n_rows, None, chunk_doc, k)

    return {"c-auto": auto, "rank_maxscore+block_max": blockmax, "rank_quant": rq}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus_gen.add_scale_args(ap)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--classes", default="normal,web,entity,rare")
    args = ap.parse_args(argv)
    if not native.available():
        raise SystemExit(native.problem() or "no kernel")
    vocab = corpus_gen.WEB
    corpus, cmeta = corpus_gen.ensure_corpus(args.docs, args.seed, vocab=vocab)
    index = corpus_gen.bench_dir_for(args.docs, args.seed, args.tokenizer, vocab) / "ours.sqlite3"
    if not index.is_file():
        raise SystemExit(f"{index}: run search_bench.py --docs {args.docs} first")
    _, normal = corpus_gen.ensure_queries(args.queries, args.seed)
    _, extra = corpus_gen.ensure_web_queries(corpus, cmeta, args.queries, args.seed)
    classes = {"normal": normal, **extra}
    plain = Engine.open(index)
    quantized = Engine.open(index, options=EngineOptions(quantized=True))
    ql: QuantLists = quantized._quant_lists()
    print(f"{index}: {plain.scorer.n_rows:,} chunks; unit {ql.unit:.6g}; {args.rounds} rounds; "
          f"1-min load average {os.getloadavg()[0]:.2f}; µs per query")
    for cls in args.classes.split(","):
        queries = classes[cls]
        lists, chunk_doc = read_lists(index, queries, 1, args.seed)
        quant = [[(t[0], quantize(t[1], ql.unit), t[1]) for t in ls] for ls in lists]
        for k in (10, 100):
            fns = kernel_configs(lists, quant, ql.unit, chunk_doc, k)
            for i in range(len(lists)):
                answers = {tuple(fn(i)) for fn in fns.values()}
                if len(answers) != 1:
                    raise SystemExit(f"{cls}: the kernels disagree on query {i}")
            report(f"{cls} k={k}, kernel only ({len(lists)} queries)",
                   timed(fns, len(lists), args.rounds), "c-auto", "rank_quant")
            for q in queries:  # the engine's answers agree, and its lists are quantised
                if plain.rank(q, k) != quantized.rank(q, k):
                    raise SystemExit(f"{cls}: the engines disagree on {q!r}")
            eng = {"engine rank": lambda i, k=k, qs=queries: plain.rank(qs[i], k),
                   "engine rank, quantized": lambda i, k=k, qs=queries: quantized.rank(qs[i], k)}
            report(f"{cls} k={k}, Engine.rank ({len(queries)} queries)",
                   timed(eng, len(queries), args.rounds), "engine rank", "engine rank, quantized")
    print(f"1-min load average at the end {os.getloadavg()[0]:.2f}; quantised lists kept: {ql.stats()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
