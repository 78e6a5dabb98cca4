"""A/B of two source trees' complete-search throughput on one index, interleaved.

``search_bench.py`` measures each throughput mode (one process with one thread, one process
with T threads, P processes) as the best of ``--repeats`` runs of 8 s, one configuration
after another. On a shared 2-core VM one 8 s run of one mode spreads by ±5% from run to run
(docs/BENCHMARKS.md), more than a change of 20 µs in a 560 µs query can move a ratio; two
commits measured an hour apart say little. Here the trees run turn about: each round runs
every (tree, mode) once, in an order rotated round by round, so that the machine's slow
minutes fall on both trees alike, and the report gives each mode's median and best over the
rounds, the ratios to one thread, and each mode's after/before.

Each run is ``search_bench.throughput`` (this checkout's, for both trees) in a fresh process
whose ``PYTHONPATH`` is that tree's ``src``: ``Engine.search(q, 10)`` with texts and
snippets, every thread of every process first answering every query once. A tree is a
checkout with its C kernel built (``python setup.py build_ext --inplace`` in it); a run that
ranks with another scorer than the C kernel (a kernel not built, or built from another
source) fails the script. For example::

    git worktree add /tmp/before 4babbfa && (cd /tmp/before && python setup.py build_ext --inplace)
    python benchmarks/throughput_ab.py --before /tmp/before --index PATH/ours.sqlite3 \\
        --queries QUERIES.json [--after .] [--rounds 4] [--seconds 8] [--threads 2] [--json F]

``--queries``: a JSON list of queries (``search_bench.py``'s ``queries-*.json``).

``--before-gil-poll-ns`` / ``--after-gil-poll-ns`` set a tree's kernel poll for the GIL
(``drsearch.index.gil_poll_ns``: how long a thread back from its GIL-free work polls before it
sleeps in CPython's wait; 0: never) in its serving processes; with ``--before . --after .``
the A/B of the poll alone::

    python benchmarks/throughput_ab.py --before . --after . --before-gil-poll-ns 0 \\
        --index PATH/ours.sqlite3 --queries QUERIES.json --rounds 8 --seconds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# One run in a child process: search_bench.throughput, its result as one JSON line.
_RUN = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import search_bench\n"
    "queries = json.loads(Path(sys.argv[2]).read_text())\n"
    "r = search_bench.throughput('ours', Path(sys.argv[3]), json.loads(sys.argv[7]), queries,\n"
    "                            int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))\n"
    "print(json.dumps({key: r.get(key) for key in ('qps', 'cores_busy', 'scorer', 'cpu_us_per_query',\n"
    "                                             'waits_per_query', 'gil_held_us_per_query',\n"
    "                                             'gil_wait_us_per_query')}))\n"
)


def run_once(tree: Path, index: Path, queries: Path, procs: int, threads: int,
             seconds: float, gil_poll_ns: int | None = None) -> dict[str, Any]:
    """One throughput run of ``tree``'s engine (``procs`` processes of ``threads`` threads;
    ``gil_poll_ns``: the kernel's poll bound there, None: its default)."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    extra = {} if gil_poll_ns is None else {"gil_poll_ns": gil_poll_ns}
    out = subprocess.run([sys.executable, "-c", _RUN, str(HERE), str(queries), str(index), str(procs),
                          str(seconds), str(threads), json.dumps(extra)], cwd=tree, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"throughput_ab: a run in {tree} failed: {out.stderr.strip().splitlines()[-1:]}")
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if not str(got["scorer"]).startswith("c"):
        raise SystemExit(f"throughput_ab: {tree} ranks with scorer {got['scorer']}, not the C kernel "
                         "(build it there: python setup.py build_ext --inplace)")
    return got


def _gil_cell(got: dict[str, Any]) -> str:
    """The run's GIL account per query (held, waited), where the tree's kernel keeps one."""
    if got.get("gil_held_us_per_query") is None:
        return ""
    return f"; GIL held {got['gil_held_us_per_query']:.0f} µs, waited {got['gil_wait_us_per_query']:.1f} µs"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="a checkout with its kernel built")
    ap.add_argument("--after", type=Path, default=HERE.parent, help="another (default: this one)")
    ap.add_argument("--index", type=Path, required=True, help="an ours.sqlite3 both can open")
    ap.add_argument("--queries", type=Path, required=True, help="a JSON list of queries")
    ap.add_argument("--rounds", type=int, default=4, help="runs of each (tree, mode)")
    ap.add_argument("--seconds", type=float, default=8.0, help="each run")
    ap.add_argument("--threads", type=int, default=2, help="T of the threads mode, P of the processes'")
    ap.add_argument("--json", type=Path, help="also write every run here")
    for t in ("before", "after"):
        ap.add_argument(f"--{t}-gil-poll-ns", type=int, metavar="NS",
                        help=f"the kernel's poll for the GIL in the {t} tree (drsearch.index.gil_poll_ns; "
                             "0: never; default: its own)")
    args = ap.parse_args(argv)
    for tree in (args.before, args.after):
        if not (tree / "src" / "drsearch").is_dir():
            print(f"throughput_ab: {tree} is not a drsearch checkout (no src/drsearch)", file=sys.stderr)
            return 2
    for f in (args.index, args.queries):
        if not f.is_file():
            print(f"throughput_ab: no such file: {f}", file=sys.stderr)
            return 2
    if args.rounds < 1 or args.seconds <= 0 or args.threads < 2:
        print("throughput_ab: --rounds >= 1, --seconds > 0 and --threads >= 2", file=sys.stderr)
        return 2
    polls = {"before": args.before_gil_poll_ns, "after": args.after_gil_poll_ns}
    if any(p is not None and p < 0 for p in polls.values()):
        print("throughput_ab: a --*-gil-poll-ns is >= 0", file=sys.stderr)
        return 2
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    modes = {"1 thread": (1, 1), f"{args.threads} threads": (1, args.threads),
             f"{args.threads} procs": (args.threads, 1)}
    jobs = [(t, m) for t in trees for m in modes]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {t: {m: [] for m in modes} for t in trees}
    for r in range(args.rounds):
        for t, m in jobs[r % len(jobs):] + jobs[:r % len(jobs)]:
            got = run_once(trees[t], args.index, args.queries, *modes[m], args.seconds, polls[t])
            runs[t][m].append(got)
            print(f"round {r + 1}: {t:<6} {m:<10} {got['qps']:8.0f} q/s (cores busy {got['cores_busy']:.2f}, "
                  f"CPU {got['cpu_us_per_query']:.0f} µs a query, {got['waits_per_query']:.2f} "
                  f"voluntary switches a query{_gil_cell(got)})", flush=True)
    print(f"\n{args.rounds} rounds of {args.seconds:g} s; q/s median (best); ratios to one thread "
          "median/median (best/best)")
    summary: dict[str, dict[str, Any]] = {}
    for t in trees:
        qps = {m: [x["qps"] for x in runs[t][m]] for m in modes}
        one = qps["1 thread"]
        summary[t] = {m: {"median": statistics.median(v), "best": max(v), "all": v} for m, v in qps.items()}
        cells = []
        for m, v in qps.items():
            cell = f"{m} {statistics.median(v):,.0f} ({max(v):,.0f})"
            if v is not one:
                cell += (f" = {statistics.median(v) / statistics.median(one):.3f}x "
                         f"({max(v) / max(one):.3f}x)")
            cells.append(cell)
        print(f"  {t:<6} {trees[t]}: " + "; ".join(cells))
    print("  CPU µs a query, median (threads: more than one thread's = CPU lost to sharing; "
          "switches = mostly GIL waits): " + "; ".join(
              f"{t} {m} {statistics.median(x['cpu_us_per_query'] for x in runs[t][m]):.0f} / "
              f"{statistics.median(x['waits_per_query'] for x in runs[t][m]):.2f}"
              for t in trees for m in modes))
    print("  after / before, median: " + "; ".join(
        f"{m} {summary['after'][m]['median'] / summary['before'][m]['median']:.3f}" for m in modes))
    if args.json:
        args.json.write_text(json.dumps({"trees": {t: str(p) for t, p in trees.items()}, "gil_poll_ns": polls,
                                         "seconds": args.seconds, "rounds": args.rounds,
                                         "summary": summary, "runs": runs}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
