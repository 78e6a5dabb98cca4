"""Where a drsearch query's time goes: per-stage timings of ``Engine.rank`` and ``search``.

Wraps the engine's stages on one open index (no source changes) and runs the benchmark
queries, reporting the mean and p50 per stage:

- ``parse``: tokenising the query with the index's FTS5 tokenizer;
- ``postings``: fetching each term's df and posting BLOBs from SQLite (``_postings``);
- ``rank_maxscore (C)`` / ``rank_blocks (C)``: the C kernel with exact pruning / over every
  posting, when built (``--pruning auto``, the default, picks per query; ``always``, ``never``);
- ``postings_of`` / ``dense_impacts`` / ``rescore`` / ``finish``: clamped-IDF terms and the
  exact rescoring of their candidates;
- numpy path only (``native=False`` or no kernel): ``accumulate``, ``select``, ``top_docs``;
- then, on an unwrapped engine: what ``search`` adds to ``rank`` (metadata rows, then chunk
  text + snippets).

Usage::

    python benchmarks/profile_rank.py [--docs 30318] [--queries 300] [--seed 1] [--pruning never]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import corpus_gen
import numpy as np


class StageClock:
    """Exclusive wall time per named stage (a wrapped call inside another is not counted
    twice: the inner stage's time is subtracted from the outer one's)."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.per_query: list[dict[str, float]] = []
        self._stack: list[float] = []  # time spent in nested stages, per open frame

    def wrap(self, obj: object, attr: str, stage: str) -> bool:
        """Replace ``obj.attr`` (if it exists) by a timed wrapper that adds to ``stage``."""
        fn: Callable[..., Any] | None = getattr(obj, attr, None)
        if not callable(fn):
            return False

        def timed(*a: Any, **kw: Any) -> Any:
            self._stack.append(0.0)
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent = time.perf_counter() - t0
                nested = self._stack.pop()
                self.current[stage] += spent - nested
                if self._stack:
                    self._stack[-1] += spent

        setattr(obj, attr, timed)
        return True

    def close_query(self) -> None:
        self.per_query.append(dict(self.current))
        self.current.clear()


# Stages wrapped when the engine has them (its internals change; absent ones are skipped).
ENGINE_STAGES = (("parse", "parse"), ("_postings", "postings"))
SCORER_STAGES = ("_postings_of", "_accumulate", "_dense_impacts", "_select", "_top_docs", "_rescore",
                 "_finish")


def _n_postings(term: Any, n_rows: int) -> int:
    """A term's postings (a sparse or paged list's df); a dense term spans every chunk."""
    from drsearch.index.scoring import DenseTerm

    return n_rows if isinstance(term, DenseTerm) else int(term.df)


def _sparse_postings(term: Any) -> int:
    from drsearch.index.scoring import DenseTerm

    return 0 if isinstance(term, DenseTerm) else int(term.df)


def profile(index: Path, queries: Sequence[str], k: int, warmup: int = 20,
            pruning: str = "auto") -> dict[str, Any]:
    """Per-stage timings over ``queries`` for rank(k); then, on an unwrapped engine, what
    ``search`` adds: metadata (``with_text=False``) and chunk text + snippets."""
    from drsearch.index import Engine, native

    e = Engine.open(index, pruning=pruning)  # type: ignore[arg-type]
    for q in queries[:warmup]:
        e.search(q, k)
    sparse, dense = [], []
    for q in queries:
        terms = [t for t in e._postings(e.parse(q), float("inf")) if t is not None]
        sparse.append(sum(_sparse_postings(t) for t in terms))
        dense.append(sum(getattr(t, "chunks", None) is None for t in terms))
    clock = StageClock()
    stages = [st for attr, st in ENGINE_STAGES if clock.wrap(e, attr, st)]
    stages += [a.lstrip("_") for a in SCORER_STAGES if clock.wrap(e.scorer, a, a.lstrip("_"))]
    kernels = native.native_kernels() if e.scorer.kind.startswith("c-") else None
    names = ("rank_maxscore", "rank_blocks")
    originals = {n: getattr(kernels, n, None) for n in names}
    for n in names:
        if kernels is not None and clock.wrap(kernels, n, f"{n} (C)"):
            stages.append(f"{n} (C)")
    rank_s: list[float] = []
    try:
        for q in queries:
            t0 = time.perf_counter()
            e.rank(q, k)
            rank_s.append(time.perf_counter() - t0)
            clock.close_query()
    finally:
        if kernels is not None:
            for n, fn in originals.items():  # the unwrapped runs below use the real kernel
                setattr(kernels, n, fn)
    e.close()

    plain = Engine.open(index, pruning=pruning)  # type: ignore[arg-type]
    ops: dict[str, Callable[[str], object]] = {
        "rank": lambda q: plain.rank(q, k),
        "search_no_text": lambda q: plain.search(q, k, with_text=False),
        "search": lambda q: plain.search(q, k),
    }
    for q in queries[:warmup]:
        for fn in ops.values():
            fn(q)
    plain_s: dict[str, list[float]] = {name: [] for name in ops}
    for q in queries:
        for name, fn in ops.items():
            t0 = time.perf_counter()
            fn(q)
            plain_s[name].append(time.perf_counter() - t0)
    plain.close()

    def summary(v: np.ndarray) -> dict[str, float]:
        return {"mean_ms": float(v.mean()) * 1e3, "p50_ms": float(np.median(v)) * 1e3}

    out: dict[str, Any] = {"stages": stages}
    for s in stages:
        out[s] = summary(np.array([pq.get(s, 0.0) for pq in clock.per_query]))
    rank = np.array(rank_s)
    out["other"] = summary(rank - np.array([sum(pq.values()) for pq in clock.per_query]))
    out["rank_total"] = summary(rank)
    pr, pn, pf = (np.array(plain_s[n]) for n in ("rank", "search_no_text", "search"))
    out["unwrapped"] = {"rank": summary(pr), "metadata": summary(pn - pr),
                        "text_snippets": summary(pf - pn), "search": summary(pf)}
    p = np.array(sparse, dtype=np.float64)
    out["sparse_postings_per_query"] = {"mean": float(p.mean()), "p50": float(np.median(p)),
                                        "max": float(p.max())}
    out["dense_terms_per_query"] = float(np.mean(dense))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Profile the benchmark index built by search_bench.py (build it there first)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus_gen.add_scale_args(ap)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--pruning", choices=("auto", "always", "never"), default="auto",
                    help="the C kernel's exact MaxScore pruning: per query (auto), always, never")
    args = ap.parse_args(argv)
    index = corpus_gen.bench_dir(args) / "ours.sqlite3"
    if not index.is_file():
        raise SystemExit(f"{index}: run search_bench.py with the same --docs/--seed first")
    _, queries = corpus_gen.ensure_queries(args.queries, args.seed)
    r = profile(index, queries, args.k, pruning=args.pruning)
    print(f"{index}  k={args.k}  pruning {args.pruning}  {len(queries)} queries")
    print(f"{'rank stage (wrapped)':<22}{'mean ms':>10}{'p50 ms':>10}{'share':>8}")
    total = r["rank_total"]["mean_ms"]
    for s in (*r["stages"], "other", "rank_total"):
        print(f"{s:<22}{r[s]['mean_ms']:>10.3f}{r[s]['p50_ms']:>10.3f}"
              f"{r[s]['mean_ms'] / total:>8.0%}")
    print(f"{'unwrapped engine':<22}{'mean ms':>10}{'p50 ms':>10}")
    for s, v in r["unwrapped"].items():
        print(f"{s:<22}{v['mean_ms']:>10.3f}{v['p50_ms']:>10.3f}")
    pp = r["sparse_postings_per_query"]
    print(f"sparse postings/query: mean {pp['mean']:,.0f}, p50 {pp['p50']:,.0f}, "
          f"max {pp['max']:,.0f}; dense (clamped-IDF) terms/query: "
          f"{r['dense_terms_per_query']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
