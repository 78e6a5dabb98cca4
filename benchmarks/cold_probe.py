"""Where a fresh process's first answer goes on a cold page cache: search_bench.py's "fresh
process open + first query" broken down.

search_bench.py evicts the index file from the page cache (``posix_fadvise(DONTNEED)``, no
root needed), spawns an interpreter that imports drsearch, opens the index and answers one
complete k = 10 search, and times the child from the parent (target < 1 s). This probe does
the same, but the child times and counts (major page faults: reads that waited for the
disk, from ``getrusage``) each stage on its own:

- ``import``: ``from drsearch.index import Engine``;
- the open's parts (``Engine.open``): the meta table, the tokenizer, the per-chunk arrays,
  the scorer's set-up, the file's mapping and its readers, whatever else (``open, rest``);
- the first query's parts: parsing, the postings (term rows and lists), ranking (with the
  kernel, the chunk texts and their snippets are made in the same call,
  ``Scorer.rank_texts``; for a query of posting lists the hits too, ``Engine._search_hits``),
  the document table, the chunk texts where they are read after the
  ranking (``SnippetMaker.of_rows``; without the kernel, ``Engine._texts``), the rest of the
  snippets and the hits (``search, rest``).

Each query of ``--runs`` runs is a fresh interpreter on a freshly evicted file; the table
shows the median per stage, and the parent's wall for the whole child (as search_bench's).
``--warm`` runs the same with the file left in the page cache.

``--cli`` times what a user runs instead: ``drsearch search --database INDEX QUERY`` as a fresh
process (``main`` of ``drsearch.tools.cli``, as the console script calls it), ``--runs`` times,
each on a freshly evicted file (or warm with ``--warm``): the import of the CLI, the command
(open, search, print), and the parent's wall from spawn to exit, the first answer's time
(target <= 0.5 s on a quiet machine); it also lists the costly modules the
process imported (numpy is the engine's own).

Usage::

    python benchmarks/cold_probe.py INDEX [--runs 5] [--warm] [--json]
    python benchmarks/cold_probe.py INDEX --cli [--runs 11] [--warm] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import corpus_gen
from search_bench import drop_from_page_cache

# The child: wraps the open's and the search's steps in timers before opening anything.
_CHILD = r"""
import json, resource, sys, time

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt

stages = {}
def add(name, t, f):
    s = stages.setdefault(name, [0.0, 0])
    s[0] += t
    s[1] += f

t0, f0 = time.perf_counter(), faults()
from drsearch.index import Engine
from drsearch.index import engine as engine_mod
add("import", time.perf_counter() - t0, faults() - f0)

# Stages nest (the one C call of ``_search_hits`` may reach ``_doc_table``): each stage keeps
# its exclusive time, its inner stages' time taken out, so the stages of a whole never sum to
# more than the whole and its "rest" is never negative.
inner = [[0.0, 0]]

def timed(owner, attr, name):
    fn = getattr(owner, attr)
    def wrapper(*a, **kw):
        t, f = time.perf_counter(), faults()
        inner.append([0.0, 0])
        try:
            return fn(*a, **kw)
        finally:
            dt, df = time.perf_counter() - t, faults() - f
            nested = inner.pop()
            add(name, dt - nested[0], df - nested[1])
            inner[-1][0] += dt
            inner[-1][1] += df
    setattr(owner, attr, wrapper)

timed(engine_mod, "_read_meta", "open: meta")
timed(engine_mod.Tokenizer, "__init__", "open: tokenizer")
timed(engine_mod, "_read_arrays", "open: arrays")
timed(engine_mod.Scorer, "__init__", "open: scorer")
timed(engine_mod.MappedFile, "__init__", "open: mapping")
timed(engine_mod.MappedFile, "column", "open: mapping")
timed(engine_mod.MappedFile, "rows", "open: mapping")
timed(Engine, "parse", "search: parse")
timed(Engine, "_postings", "search: postings")
timed(engine_mod.Scorer, "rank_texts", "search: rank")  # with the texts where the C kernel makes them
timed(Engine, "_search_hits", "search: rank")  # ranking, texts, snippets and hits in one C call
timed(Engine, "_doc_table", "search: doc table")
timed(Engine, "_texts", "search: texts")
timed(engine_mod.SnippetMaker, "of_rows", "search: texts")  # texts + snippets in one C call

t, f = time.perf_counter(), faults()
e = Engine.open(sys.argv[1])
open_t, open_f = time.perf_counter() - t, faults() - f
t, f = time.perf_counter(), faults()
r = e.search(sys.argv[2], 10)
search_t, search_f = time.perf_counter() - t, faults() - f
for whole, t_all, f_all in (("open", open_t, open_f), ("search", search_t, search_f)):
    parts = [v for k, v in stages.items() if k.startswith(whole + ":")]
    add(whole + ": rest", t_all - sum(p[0] for p in parts), f_all - sum(p[1] for p in parts))
print(json.dumps({"stages": stages, "hits": len(r.hits), "total_s": time.perf_counter() - t0},
                 sort_keys=True))
"""


# `drsearch search` in a fresh interpreter: the CLI's import and the command timed inside, the
# modules it ended with; the answer itself goes to stdout as for a user.
_CLI_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from drsearch.tools.cli import main
t1 = time.perf_counter()
code = main(sys.argv[1:])
t2 = time.perf_counter()
sys.stdout.flush()
heavy = sorted(m for m in COSTLY if m in sys.modules)
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": t1 - t0, "command_s": t2 - t1, "code": code, "costly": heavy,
                  "cpu_s": ru.ru_utime + ru.ru_stime}), file=sys.stderr)
"""
COSTLY = ("fastapi", "starlette", "uvicorn", "httpx", "onnxruntime", "pydantic", "scipy", "tqdm",
          "orjson", "numpy", "drsearch.server", "drsearch.release", "drsearch.corpus",
          "drsearch.benchmark", "drsearch.agents")


def cli_run(index: Path, query: str, cold: bool) -> dict[str, Any]:
    """One fresh ``drsearch search`` process: its stages and the parent's wall (seconds)."""
    if cold:
        drop_from_page_cache(index)
    code = _CLI_CHILD.replace("COSTLY", repr(COSTLY))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, "search", "--database", str(index), query],
                         capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0 or not out.stdout.strip():
        raise SystemExit(f"drsearch search failed:\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stderr.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def cli_report(index: Path, runs: list[dict[str, Any]], cold: bool, as_json: bool) -> None:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs) * 1e3

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = (time.perf_counter() - t0) * 1e3
    wall = med("wall_s")
    print(f"drsearch search on {index}, {len(runs)} fresh processes, page cache "
          f"{'cold' if cold else 'warm'}; medians (ms): import of the CLI {med('import_s'):.1f}, "
          f"command (open, search, print) {med('command_s'):.1f}, first answer (parent wall) "
          f"{wall:.1f} (target <= 500 on a quiet machine: {'PASS' if wall <= 500 else 'MISS'}); "
          f"CPU time of the process (user + system, what a quiet machine's wall approaches) "
          f"{med('cpu_s'):.1f}; a bare interpreter {bare:.1f}; load averages {os.getloadavg()}")
    print(f"costly modules imported: {', '.join(runs[0]['costly']) or 'none'}")
    if as_json:
        print(json.dumps({"index": str(index), "runs": len(runs), "cold": cold, "cli": True,
                          "import_ms": med("import_s"), "command_ms": med("command_s"),
                          "wall_ms": wall, "cpu_ms": med("cpu_s"),
                          "walls_ms": [r["wall_s"] * 1e3 for r in runs],
                          "bare_interpreter_ms": bare, "costly": runs[0]["costly"]}, sort_keys=True))


def one_run(index: Path, query: str, cold: bool) -> dict[str, Any]:
    if cold:
        drop_from_page_cache(index)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, str(index), query], capture_output=True,
                         text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"child failed:\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stdout)
    result["wall_s"] = wall
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--queries", type=int, default=corpus_gen.DEFAULT_QUERIES)
    ap.add_argument("--seed", type=int, default=corpus_gen.DEFAULT_SEED)
    ap.add_argument("--warm", action="store_true", help="leave the file in the page cache")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cli", action="store_true", help="time `drsearch search` processes instead")
    args = ap.parse_args(argv)
    if not args.index.is_file():
        ap.error(f"{args.index}: no such index file")
    if args.runs < 1:
        ap.error("--runs must be positive")
    _, queries = corpus_gen.ensure_queries(args.queries, args.seed)
    if args.cli:
        cli_runs = [cli_run(args.index, queries[i % len(queries)], not args.warm) for i in range(args.runs)]
        cli_report(args.index, cli_runs, not args.warm, args.json)
        return 0
    # search_bench's first queries: the normal list from its start
    runs = [one_run(args.index, queries[i % len(queries)], not args.warm) for i in range(args.runs)]
    names = list(runs[0]["stages"])
    print(f"{args.index} ({args.index.stat().st_size / (1 << 20):,.0f} MiB), {args.runs} fresh "
          f"processes, page cache {'warm' if args.warm else 'cold'}; median per stage:")
    print(f"{'stage':<22}{'ms':>9}{'major faults':>14}")
    table: dict[str, dict[str, float]] = {}
    for name in names:
        ms = statistics.median(r["stages"][name][0] for r in runs) * 1e3
        mf = statistics.median(r["stages"][name][1] for r in runs)
        table[name] = {"ms": ms, "major_faults": mf}
        print(f"{name:<22}{ms:>9.1f}{mf:>14.0f}")
    child = statistics.median(r["total_s"] for r in runs) * 1e3
    wall = statistics.median(r["wall_s"] for r in runs) * 1e3
    print(f"{'child, all stages':<22}{child:>9.1f}")
    print(f"{'parent wall':<22}{wall:>9.1f}   (search_bench's figure; target < 1,000 ms "
          f"{'PASS' if wall < 1000 else 'FAIL'})")
    if args.json:
        print(json.dumps({"index": str(args.index), "runs": args.runs, "cold": not args.warm,
                          "stages": table, "child_ms": child, "wall_ms": wall,
                          "walls_ms": [r["wall_s"] * 1e3 for r in runs]}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
