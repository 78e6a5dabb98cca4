"""Build benchmark: drsearch's build against tantivy's, same corpus, same number of threads.

Every build runs in a fresh interpreter (``search_bench.py``'s build children: the same
chunks, the same tokenizer for tantivy as the search benchmark uses); builds are interleaved
(ours 1 thread, tantivy, ours 2 threads, per repeat) and each one's median over ``--repeat``
is kept, because this machine is shared and absolute times drift. Measured per build:

- wall seconds (the parent's clock around the child: interpreter start included for all);
- CPU seconds (user + system of the child and its worker process, from ``wait4``);
- peak RSS: ours reports its process's plus its worker's peaks (a bound: they need not
  coincide); tantivy's is its process's;
- the file's bytes; and whether ours with 1 and 2 threads wrote the same bytes (sha256);
- the 1-minute load average before and after the builds (walls mean little when it is
  above the CPU count: other jobs take the cores; CPU seconds do not depend on it).

Targets (issue: a build that streams): build wall <= 1.5x tantivy's with the same threads,
peak RSS <= 1 GB at any scale, byte-identical files for any ``--threads``.

Usage::

    python benchmarks/build_bench.py --docs 2000            # small run (~1 min)
    python benchmarks/build_bench.py --docs 30318 --repeat 1  # DR-256 scale
    python benchmarks/build_bench.py --docs 121272 --vocabulary large  # 4x, ~2M rare names
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import corpus_gen

HERE = Path(__file__).resolve().parent
GB = 1_000_000_000
TANTIVY_HEAP_PER_THREAD = 256 << 20  # as search_bench.py gives it


def run_build(child: str, args: dict[str, Any]) -> dict[str, Any]:
    """One build child in a fresh interpreter; its JSON result plus wall and CPU seconds."""
    t0 = time.perf_counter()
    cmd = [sys.executable, str(HERE / "search_bench.py"), "--child", child, json.dumps(args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"build child {child} failed:\n{err[-4000:]}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def measure(child: str, args: dict[str, Any]) -> dict[str, Any]:
    """run_build with the CPU time of the child's whole process tree (RUSAGE_CHILDREN grows
    by the reaped child's time, which counts the worker it reaped in turn)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run_build(child, args)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 24):
            h.update(block)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=2000, help="documents (DR-256: 30318; 4x: 121272)")
    ap.add_argument("--seed", type=int, default=corpus_gen.DEFAULT_SEED)
    ap.add_argument("--tokenizer", choices=("porter", "unicode61"), default="porter")
    ap.add_argument("--vocabulary", choices=corpus_gen.VOCABULARIES, default="web",
                    help="corpus variant (corpus_gen.py): web (default), synthetic15k, large")
    ap.add_argument("--threads", type=int, default=2, help="threads for tantivy and our parallel build")
    ap.add_argument("--repeat", type=int, default=1, help="builds per configuration (median kept)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = ap.parse_args(argv)
    if args.docs < 1 or args.repeat < 1 or not 1 <= args.threads <= 2:
        ap.error("--docs and --repeat must be positive, --threads 1 or 2")
    vocab = corpus_gen.Vocabulary(args.vocabulary)
    corpus, meta = corpus_gen.ensure_corpus(args.docs, args.seed, vocab=vocab)
    work = corpus_gen.CACHE / f"build-bench-n{args.docs}-s{args.seed}-{args.tokenizer}{vocab.tag}"
    work.mkdir(parents=True, exist_ok=True)
    common = {"corpus": str(corpus), "tokenizer": args.tokenizer}
    configs = {
        "ours-1": ("build-ours", {**common, "out": str(work / "ours-1.sqlite3"), "threads": 1}),
        f"tantivy-{args.threads}": ("build-tantivy", {**common, "dir": str(work / "tantivy"),
                                                      "threads": args.threads,
                                                      "heap_bytes": TANTIVY_HEAP_PER_THREAD * args.threads}),
        f"ours-{args.threads}": ("build-ours", {**common, "out": str(work / f"ours-{args.threads}.sqlite3"),
                                                "threads": args.threads}),
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in configs}
    load_before = os.getloadavg()[0]
    for _ in range(args.repeat):
        for name, (child, cargs) in configs.items():
            runs[name].append(measure(child, cargs))
    res = {name: {key: statistics.median(r[key] for r in rs) for key in ("wall_s", "cpu_s", "peak_rss_bytes")}
           | {"bytes": rs[-1]["bytes"], "chunks": rs[-1]["chunks"]} for name, rs in runs.items()}
    identical = sha256(work / "ours-1.sqlite3") == sha256(work / f"ours-{args.threads}.sqlite3")
    tv = res[f"tantivy-{args.threads}"]
    ours = res[f"ours-{args.threads}"]
    load_after = os.getloadavg()[0]
    print(f"corpus: {args.docs} documents, {meta['chunks']} chunks ({corpus.name}, vocabulary "
          f"{args.vocabulary}); "
          f"{os.cpu_count()} CPUs; repeat {args.repeat}; load average {load_before:.1f} -> {load_after:.1f}")
    print(f"{'build':<12}{'wall s':>9}{'CPU s':>9}{'peak RSS MB':>13}{'file MB':>10}")
    for name, r in res.items():
        print(f"{name:<12}{r['wall_s']:>9.2f}{r['cpu_s']:>9.2f}{r['peak_rss_bytes'] / 1e6:>13.0f}"
              f"{r['bytes'] / 1e6:>10.1f}")
    rss, rss_1 = ours["peak_rss_bytes"], res["ours-1"]["peak_rss_bytes"]
    checks = [
        (f"wall ours-{args.threads}/tantivy-{args.threads}", ours["wall_s"] / tv["wall_s"], "<= 1.5",
         ours["wall_s"] / tv["wall_s"] <= 1.5),
        (f"wall ours-1/tantivy-{args.threads}", res["ours-1"]["wall_s"] / tv["wall_s"], "", None),
        (f"CPU ours-{args.threads}/tantivy-{args.threads}", ours["cpu_s"] / tv["cpu_s"], "", None),
        (f"peak RSS ours-{args.threads}/tantivy-{args.threads}", rss / tv["peak_rss_bytes"], "", None),
        (f"peak RSS ours-{args.threads} GB", rss / GB, "<= 1.0", rss <= GB),
        ("peak RSS ours-1 GB", rss_1 / GB, "<= 1.0", rss_1 <= GB),
    ]
    split = runs[f"ours-{args.threads}"][-1]
    if args.threads > 1:  # where the parallel build's CPU went: the critical path is the larger side
        print(f"ours-{args.threads} CPU by side (last run): writing process {split['self_cpu_s']:.2f} s "
              f"(staging, SQLite, FTS5, zlib), tokenizing worker {split['worker_cpu_s']:.2f} s")
    for label, value, target, ok in checks:
        verdict = "" if ok is None else ("PASS" if ok else "FAIL")
        print(f"{label:<34}{value:>8.2f}  {target:<7} {verdict}")
    print(f"{'same bytes for 1 and ' + str(args.threads) + ' threads':<34}{identical!s:>8}  "
          f"{'True':<7} {'PASS' if identical else 'FAIL'}")
    if args.json:
        print(json.dumps({"docs": args.docs, "chunks": meta["chunks"], "vocabulary": args.vocabulary,
                          "results": res,
                          "identical_bytes": identical, "load_average": [load_before, load_after],
                          "ours_split": {k: split.get(k) for k in ("self_cpu_s", "worker_cpu_s")}},
                         sort_keys=True))
    shutil.rmtree(work / "tantivy", ignore_errors=True)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
