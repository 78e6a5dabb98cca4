"""A/B of two builds of the C ranking kernel on the same posting lists, in one process.

Loads two compiled ``_kernels`` modules (e.g. one built from an earlier commit's
``_kernels.c`` and the working tree's) under separate names, reads the benchmark queries'
sparse lists from a benchmark index (``search_bench.py`` builds it), and times each kernel
call — ``rank_blocks``, ``rank_maxscore`` without block maxima, and, when the "after"
module takes them, ``rank_maxscore`` with block maxima — interleaved query by query (in a
seeded random order per query and round: a query's first call finds its lists colder),
keeping each query's median over ``--rounds``. Kernel time only: no
SQLite, no Python ranking code, no clamped (dense) terms (the first pass's lists, margin
-1). Every configuration's answer is checked equal before timing. With block maxima, a
"c-auto" row times what the engine's ``auto`` pruning would call for each query
(``Scorer._prunes``: PRUNE_ALL_K, PRUNE_ALL_ROWS), and after the table each entry point's
after/before ratio is printed (the median of the per-query ratios, and the ratio of the
p50s and of the p99s).

``--index``/``--query-file`` read the lists from an existing index and query list (JSON
array), read only, instead of the ``--docs``/``--seed`` benchmark cache's.
``--before-rows``/``--after-rows`` size each module's score buffer (rowids; default
BLOCK_ROWS): the kernel takes ``rank_blocks``' block, and the cap of ``rank_maxscore``'s
windows, from the buffer's length.

``--replicate R`` makes an R-times larger corpus from the same lists: R copies of the chunk
rowids (documents too), copy r > 0 with each term's impacts scaled by a factor drawn in
[0.6, 1.0] (seeded), so that copies do not tie; block maxima are recomputed. It stands in
for a larger corpus of the same shape; it is not one (df and IDF are not the real ones).

Usage::

    python benchmarks/kernel_ab.py --before old/_kernels.so --after src/drsearch/index/_kernels*.so \\
        --docs 3000 --queries 100 [--replicate 16] [--rounds 5]
    python benchmarks/kernel_ab.py --before a.so --after b.so \
        --index path/ours.sqlite3 --query-file path/queries.json [--after-rows 16384]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import corpus_gen
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from drsearch.index.scoring import BLOCK_ROWS, PRUNE_ALL_K, PRUNE_ALL_ROWS  # noqa: E402

BLOCK_POSTINGS = 64


def load_kernels(name: str, path: Path) -> ModuleType:
    """A compiled ``_kernels`` module loaded as ``<name>._kernels`` (its init is PyInit__kernels)."""
    full = f"{name}._kernels"
    loader = importlib.machinery.ExtensionFileLoader(full, str(path))
    spec = importlib.util.spec_from_file_location(full, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def takes_block_maxima(kernels: ModuleType) -> bool:
    return "block_max" in (kernels.rank_maxscore.__doc__ or "")


List = tuple[Any, Any, float, Any]


def read_lists(index: Path, queries: Sequence[str], replicate: int,
               seed: int) -> tuple[list[list[List]], Any]:
    """Each query's sparse lists (rowids, impacts, bound, block maxima), and chunk_doc."""
    from drsearch.index import Engine
    from drsearch.index.engine import EngineOptions
    from drsearch.index.scoring import SparseTerm

    rng = np.random.default_rng(seed)
    # every sparse list as arrays (SparseTerm), none left paged
    with Engine.open(index, options=EngineOptions(paged_list_bytes=1 << 62)) as e:
        n0 = e.scorer.n_rows
        cd0 = e.scorer._chunk_doc32
        n_docs = int(cd0.max())
        chunk_doc = np.concatenate([[0]] + [cd0[1:] + r * n_docs for r in range(replicate)]).astype(np.int32)
        out = []
        for q in queries:
            terms = [t for t in e._postings(e.parse(q), float("inf")) if isinstance(t, SparseTerm)]
            lists = []
            for t in terms:
                ids = np.concatenate([t.chunks.astype(np.int64) + r * n0 for r in range(replicate)])
                imps = np.concatenate([t.impacts * (1.0 if r == 0 else rng.uniform(0.6, 1.0))
                                       for r in range(replicate)])
                bmax = (np.maximum.reduceat(imps, np.arange(0, len(imps), BLOCK_POSTINGS))
                        if len(imps) > BLOCK_POSTINGS else np.empty(0))
                lists.append((ids.astype(np.uint32), imps, float(imps.max()), bmax))
            if lists:
                out.append(lists)
    return out, chunk_doc


Call = Callable[[list[List]], tuple[int, int, float]]


def auto_prunes(lists: list[List], k: int, n_rows: int) -> bool:
    """``Scorer._prunes`` under ``auto`` with block maxima: whether the engine would call
    ``rank_maxscore`` (else ``rank_blocks``) for these lists."""
    if k <= PRUNE_ALL_K and n_rows >= PRUNE_ALL_ROWS:
        return True
    return 4 * sum(len(t[0]) for t in lists) < n_rows


def configurations(mods: dict[str, ModuleType], rows: dict[str, int], k: int, chunk_doc: Any,
                   out_c: Any, out_s: Any) -> dict[str, Call]:
    """Each kernel entry point of each module (its score buffer ``rows[label]`` doubles), as
    a call on one query's lists."""
    from drsearch.index.memory import hugepage_zeros

    n_rows = len(chunk_doc) - 1
    fns: dict[str, Call] = {}
    for label, m in mods.items():
        # As the engine's Scratch holds it: zeroed, on a 2 MiB boundary, advised for huge pages.
        buf = hugepage_zeros(8 * rows[label]).view(np.float64)
        def blocks(lists: list[List], m: ModuleType = m, buf: Any = buf) -> tuple[int, int, float]:
            return m.rank_blocks([t[0] for t in lists], [t[1] for t in lists], n_rows, None, chunk_doc, k,
                                 -1.0, buf, out_c, out_s, 10.0)

        def maxscore(lists: list[List], m: ModuleType = m, buf: Any = buf) -> tuple[int, int, float]:
            return m.rank_maxscore([t[0] for t in lists], [t[1] for t in lists],
                                   np.array([t[2] for t in lists]), n_rows, None, chunk_doc, k, -1.0, buf,
                                   out_c, out_s, 10.0)

        fns[f"{label} rank_blocks"] = blocks
        fns[f"{label} rank_maxscore"] = maxscore
        if takes_block_maxima(m):
            def blockmax(lists: list[List], m: ModuleType = m,
                         buf: Any = buf) -> tuple[int, int, float]:
                return m.rank_maxscore([t[0] for t in lists], [t[1] for t in lists],
                                       np.array([t[2] for t in lists]), n_rows, None, chunk_doc, k, -1.0,
                                       buf, out_c, out_s, 10.0, None, [t[3] for t in lists],
                                       BLOCK_POSTINGS)

            def auto(lists: list[List], blockmax: Call = blockmax,
                     blocks: Call = blocks) -> tuple[int, int, float]:
                return blockmax(lists) if auto_prunes(lists, k, n_rows) else blocks(lists)

            fns[f"{label} rank_maxscore+block_max"] = blockmax
            fns[f"{label} c-auto"] = auto
    return fns


def run(fns: dict[str, Call], queries: list[list[List]], rounds: int, out_c: Any,
        out_s: Any) -> dict[str, Any]:
    """Per configuration, each query's median kernel time (µs), after checking the answers."""
    for lists in queries:
        answers = set()
        for fn in fns.values():
            n = fn(lists)[0]
            answers.add((n, tuple(out_c[:n].tolist()), tuple(out_s[:n].tolist())))
        if len(answers) != 1:
            raise SystemExit("the kernels disagree on a query")
    times = {name: np.zeros((len(queries), rounds)) for name in fns}
    names = list(fns)
    rng = np.random.default_rng(20261201)
    for r in range(rounds):
        for i, lists in enumerate(queries):
            # A fresh seeded order per query and round: the first call of a query finds its
            # lists colder than the next ones, so no configuration may always come first.
            for j in rng.permutation(len(names)):
                name = names[j]
                t0 = time.perf_counter()
                fns[name](lists)
                times[name][i, r] = time.perf_counter() - t0
    return {name: np.median(t, axis=1) * 1e6 for name, t in times.items()}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    corpus_gen.add_scale_args(ap)
    ap.add_argument("--before", type=Path, required=True, help="a compiled _kernels module")
    ap.add_argument("--after", type=Path, required=True, help="another compiled _kernels module")
    ap.add_argument("--replicate", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--index", type=Path, help="an existing index (read only) instead of the cache's")
    ap.add_argument("--query-file", type=Path, help="its queries (a JSON array of strings)")
    ap.add_argument("--before-rows", type=int, default=BLOCK_ROWS, help="before's score buffer")
    ap.add_argument("--after-rows", type=int, default=BLOCK_ROWS, help="after's score buffer")
    args = ap.parse_args(argv)
    if (args.index is None) != (args.query_file is None):
        ap.error("--index and --query-file go together")
    if min(args.before_rows, args.after_rows) < 64:
        ap.error("--before-rows/--after-rows must be at least 64")
    if args.index is not None:
        index = args.index
        if not index.is_file():
            ap.error(f"{index}: no such index")
        queries = json.loads(args.query_file.read_text(encoding="utf-8"))
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            ap.error(f"{args.query_file}: not a JSON array of strings")
        queries = queries[: args.queries]
    else:
        index = corpus_gen.bench_dir(args) / "ours.sqlite3"
        if not index.is_file():
            raise SystemExit(f"{index}: run search_bench.py with the same --docs/--seed first")
        _, queries = corpus_gen.ensure_queries(args.queries, args.seed)
    mods = {"before": load_kernels("before", args.before), "after": load_kernels("after", args.after)}
    rows = {"before": args.before_rows, "after": args.after_rows}
    lists, chunk_doc = read_lists(index, queries, args.replicate, args.seed)
    n_rows = len(chunk_doc) - 1
    rarest = [[min(q, key=lambda t: len(t[0]))] for q in lists]
    postings = np.array([sum(len(t[0]) for t in q) for q in lists])
    print(f"{index}: {n_rows:,} chunks (x{args.replicate}), {len(lists)} queries, "
          f"{np.median(postings):,.0f} sparse postings/query (median); kernel µs per query, "
          f"median of {args.rounds} rounds; score buffers: before {args.before_rows:,}, "
          f"after {args.after_rows:,} rowids")
    out_c, out_s = np.empty(n_rows + 1, dtype=np.int64), np.empty(n_rows + 1)
    for k in (10, 100):
        fns = configurations(mods, rows, k, chunk_doc, out_c, out_s)
        for label, qs in (("queries", lists), ("each query's rarest term alone", rarest)):
            res = run(fns, qs, args.rounds, out_c, out_s)
            print(f"k={k}, {label}:{'p50':>{44 - len(label)}}{'p99':>9}{'mean':>9}")
            for name, us in res.items():
                print(f"  {name:<36}{np.percentile(us, 50):9.1f}{np.percentile(us, 99):9.1f}{us.mean():9.1f}")
            print(f"  after/before:{'per-query':>33}{'p50':>9}{'p99':>9}")
            for name in [n.removeprefix("before ") for n in res if n.startswith("before ")]:
                b, a = res[f"before {name}"], res.get(f"after {name}")
                if a is not None:
                    print(f"  {name:<36}{np.median(a / b):9.3f}"
                          f"{np.percentile(a, 50) / np.percentile(b, 50):9.3f}"
                          f"{np.percentile(a, 99) / np.percentile(b, 99):9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
