"""A/B of the per-query cost of two source trees of drsearch on one index, interleaved.

The "before" tree is ``git archive`` of a commit (its ``src/``), given the working tree's
compiled ``_kernels`` module (so only the Python side differs; a commit whose kernel
interface differs is refused by the engine's version check and ranks with numpy, which
this script reports as the scorer), or with ``--before-kernel SO`` that compiled module
instead (a build of the commit's own ``_kernels.c``: then the whole search path differs).
The "after" tree is this checkout's ``src/``. Each tree runs in its own worker process with
the index open; the parent sends every query to both,
in a seeded random order per query and round, so that background load and cache state hit
both alike, and keeps each query's median over ``--rounds``. Each worker times
``Engine.search(q, k, with_text=False)`` (the benchmark's ranked operation, as
``search_bench.py`` calls it) with ``perf_counter_ns``, and returns a digest of the hits
(docid, chunk ordinal, the score's exact bits): every query's digests must be equal, or
the script fails. ``--stages`` adds one more interleaved round timing each stage of the
ranked search (parse, posting lists, ranking, hit rows) in both trees.

Usage::

    python benchmarks/overhead_ab.py --index PATH/ours.sqlite3 --queries QUERIES.json \\
        [--before HEAD~3] [--k 10] [--rounds 7] [--class rare] [--stages]

``--queries``: a JSON list of queries, or an object of query classes (``search_bench.py``'s
large-vocabulary ``.queries-*.json``: ``entity``, ``rare``); each class is reported.
The index is opened read-only (a frozen file; nothing is written).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path
from typing import Any, TextIO

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SEED = 20261201


def digest(hits: Sequence[Any]) -> str:
    """The hits' identity: docid, chunk ordinal and the score's exact bits, in order."""
    h = hashlib.sha256()
    for x in hits:
        h.update(f"{x.docid}\0{x.chunk_ordinal}\0{float(x.score).hex()}\n".encode())
    return h.hexdigest()[:16]


def worker(src: str, index: str) -> int:
    """Answer ``{"q", "k"}`` lines with ``{"ns", "digest"}`` lines (and a first ``scorer`` line)."""
    sys.path.insert(0, src)
    from drsearch.index import Engine

    e = Engine.open(index)
    out: TextIO = sys.stdout
    out.write(json.dumps({"scorer": e.stats()["scorer"], "module": sys.modules["drsearch"].__file__})
              + "\n")
    out.flush()
    clock = time.perf_counter_ns
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("stages"):
            out.write(json.dumps({"stages": stages(e, req["q"], req["k"])}) + "\n")
            out.flush()
            continue
        t0 = clock()
        res = e.search(req["q"], req["k"], with_text=False)
        ns = clock() - t0
        out.write(json.dumps({"ns": ns, "digest": digest(res.hits)}) + "\n")
        out.flush()
    return 0


STAGES = ("parse", "postings", "rank", "hits")


def stages(e: Any, q: str, k: int) -> dict[str, int]:
    """One ranked search's stages, each timed (ns): parsing, the term rows and posting lists
    (``_postings``), ranking (``Scorer.rank``), and the hits (in C by ``make_hits`` where the
    tree has it, else their rows from the document table and per-chunk arrays) — called as
    each tree's ``search`` calls them."""
    from drsearch.contract import Hit
    clock = time.perf_counter_ns
    deadline = time.monotonic() + 60.0
    t0 = clock()
    parsed = e.parse(q)
    t1 = clock()
    terms = e._postings(parsed, deadline)
    t2 = clock()
    ranked = e.scorer.rank(terms, k, e._blocked_chunks, e._scratch(), deadline)
    t3 = clock()
    kernels = getattr(e, "_kernels", None)  # (before the one door: the engine held the module)
    if kernels is None and getattr(e, "_kernel", False):  # (a dict lookup: no import per query)
        kernels = sys.modules["drsearch.index.native"].native_kernels()
    if ranked and kernels is not None and hasattr(kernels, "make_hits"):
        # (offsets, fields) in older trees; (offsets, fields, pieces or None) since the fields
        # can stay in the file's pages
        got = e._doc_table().fields()
        pieces = () if len(got) < 3 or got[2] is None else (got[2],)
        kernels.make_hits(Hit, [c for c, _ in ranked], [s for _, s in ranked], e._chunk_doc,
                          e._chunk_ordinal, got[0], got[1], *pieces)
    elif ranked:
        rows = np.array([c for c, _ in ranked], dtype=np.intp)
        e._doc_table().get(e._chunk_doc[rows].tolist())
        e._chunk_ordinal[rows].tolist()
    t4 = clock()
    return dict(zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True))


class Worker:
    def __init__(self, name: str, src: Path, index: Path) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", str(src), str(index)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        hello = json.loads(self._line())
        self.scorer, self.module = hello["scorer"], hello["module"]

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name} worker exited (rc {self.proc.wait()})")
        return line

    def ask(self, q: str, k: int) -> tuple[int, str]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"q": q, "k": k}) + "\n")
        r = json.loads(self._line())
        return int(r["ns"]), str(r["digest"])

    def stages(self, q: str, k: int) -> dict[str, int]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"q": q, "k": k, "stages": True}) + "\n")
        return dict(json.loads(self._line())["stages"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def before_tree(commit: str, into: Path, kernel: Path | None = None) -> Path:
    """``src/`` of ``commit`` under ``into``, with this checkout's compiled kernel copied in
    (or ``kernel``, a compiled ``_kernels`` module, under this checkout's module's name)."""
    tar = subprocess.run(["git", "-C", str(REPO), "archive", commit, "src"], check=True,
                         capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as tf:
        tf.extractall(into, filter="data")
    for so in (REPO / "src" / "drsearch" / "index").glob("_kernels*.so"):
        shutil.copy2(so if kernel is None else kernel, into / "src" / "drsearch" / "index" / so.name)
    return into / "src"


def run(workers: Sequence[Worker], classes: dict[str, list[str]], k: int, rounds: int,
        warmup: int, with_stages: bool = False) -> dict[str, Any]:
    rng = random.Random(SEED)
    report: dict[str, Any] = {}
    for cls, queries in classes.items():
        for q in queries[:warmup]:
            for w in workers:
                w.ask(q, k)
        per: dict[str, list[list[int]]] = {w.name: [[] for _ in queries] for w in workers}
        mismatched = 0
        for _ in range(rounds):
            for i, q in enumerate(queries):
                order = list(workers)
                rng.shuffle(order)
                digests = set()
                for w in order:
                    ns, d = w.ask(q, k)
                    per[w.name][i].append(ns)
                    digests.add(d)
                mismatched += len(digests) > 1
        report[cls] = {"n": len(queries), "mismatched": mismatched}
        for name, times in per.items():
            med = np.array([np.median(t) for t in times]) / 1e6
            report[cls][name] = {"p50_ms": float(np.percentile(med, 50)),
                                 "p99_ms": float(np.percentile(med, 99)),
                                 "mean_ms": float(med.mean())}
        if with_stages:  # one more interleaved round, stage by stage
            st: dict[str, dict[str, list[int]]] = {w.name: {s: [] for s in STAGES} for w in workers}
            for q in queries:
                order = list(workers)
                rng.shuffle(order)
                for w in order:
                    for s, ns in w.stages(q, k).items():
                        st[w.name][s].append(ns)
            for name, by in st.items():
                report[cls][name]["stages_p50_ms"] = {s: float(np.median(v)) / 1e6 for s, v in by.items()}
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["--worker"]:
        return worker(args_in[1], args_in[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, required=True, help="an ours.sqlite3 built by search_bench.py")
    ap.add_argument("--queries", type=Path, required=True, help="JSON list, or object of classes")
    ap.add_argument("--before", default="HEAD", help="commit of the 'before' tree (default HEAD)")
    ap.add_argument("--before-kernel", type=Path,
                    help="a compiled _kernels module for the 'before' tree (default: this checkout's)")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--class", dest="cls", action="append", help="only these query classes")
    ap.add_argument("--limit", type=int, default=0, help="first N queries of each class (0: all)")
    ap.add_argument("--stages", action="store_true",
                    help="then one more round timing parse / postings / rank / hits (p50 each)")
    ap.add_argument("--json", type=Path, help="write the report here too")
    args = ap.parse_args(args_in)
    if not args.index.is_file():
        raise SystemExit(f"{args.index}: no such index")
    if args.before_kernel is not None and not args.before_kernel.is_file():
        raise SystemExit(f"--before-kernel {args.before_kernel}: no such file")
    data = json.loads(args.queries.read_text(encoding="utf-8"))
    classes: dict[str, list[str]] = {"normal": data} if isinstance(data, list) else dict(data)
    if args.cls:
        classes = {c: classes[c] for c in args.cls}
    if args.limit:
        classes = {c: v[: args.limit] for c, v in classes.items()}
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "--verify", "--quiet",
                          args.before + "^{commit}"], capture_output=True, text=True)
    if rev.returncode:
        print(f"--before {args.before}: not a commit of {REPO}", file=sys.stderr)
        return 2
    commit = rev.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="drsearch-ab-") as tmp:
        old = before_tree(args.before, Path(tmp), args.before_kernel)
        workers = [Worker(f"before {commit}", old, args.index),
                   Worker("after (worktree)", REPO / "src", args.index)]
        try:
            for w in workers:
                print(f"{w.name}: scorer {w.scorer}, {w.module}")
            report = run(workers, classes, args.k, args.rounds, args.warmup, args.stages)
        finally:
            for w in workers:
                w.close()
    names = [w.name for w in workers]
    print(f"Engine.search(q, k={args.k}, with_text=False), per-query median of {args.rounds} "
          f"interleaved rounds, ms")
    print(f"{'class':<8}{'n':>5}" + "".join(f"{n + ' p50':>24}{'p99':>8}" for n in names)
          + f"{'p50 after/before':>18}{'identical':>11}")
    for cls, r in report.items():
        a, b = r[names[0]], r[names[1]]
        print(f"{cls:<8}{r['n']:>5}" + "".join(f"{x['p50_ms']:>24.3f}{x['p99_ms']:>8.3f}" for x in (a, b))
              + f"{b['p50_ms'] / a['p50_ms']:>17.2f}x{r['n'] * args.rounds - r['mismatched']:>6}/"
              f"{r['n'] * args.rounds}")
    if args.stages:
        print("stages, p50 ms (one interleaved round): " + " / ".join(STAGES))
        for cls, r in report.items():
            for n in names:
                print(f"{cls:<8}{n:<22}" + "".join(f"{r[n]['stages_p50_ms'][s]:>10.3f}" for s in STAGES))
    if args.json:
        args.json.write_text(json.dumps({"before": commit, "k": args.k, "rounds": args.rounds,
                                         "report": report}, indent=1, sort_keys=True) + "\n")
    bad = sum(r["mismatched"] for r in report.values())
    if bad:
        print(f"{bad} query runs answered differently by the two trees", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
