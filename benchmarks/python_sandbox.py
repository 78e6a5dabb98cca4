"""What the python tool's sandbox costs per call: the same programs run through
``LocalPython(isolation="none")`` (resource limits only) and ``LocalPython()`` (the
namespaces sandbox), interleaved in a seeded random order within each pair so drift of the
machine's speed hits both alike. Prints, per program, the median and 90th percentile wall
time of a whole call (temporary directory, launcher, interpreter start, program, clean-up)
for each isolation and the median difference, and the median CPU time (user + system) of all
the processes a call ran (``RUSAGE_CHILDREN``; unlike wall time, it barely depends on how
busy the machine is); ``--json FILE`` also writes them.

    python benchmarks/python_sandbox.py                 # n=40 calls per program and isolation
    python benchmarks/python_sandbox.py --n 100 --json sandbox.json
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import time
from pathlib import Path
from typing import Any

from drsearch.agents import DR256, LocalPython
from drsearch.agents.pytool import Isolation, python_limits

PROGRAMS = {
    "print": "print(2962 * 1000)",
    "compute": "print(sum(i * i for i in range(200_000)))",
    "import-json-re": "import json, re\nprint(json.dumps(re.findall(r'\\d+', 'a1b22c333')))",
}


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every reaped descendant, recursively
    return usage.ru_utime + usage.ru_stime


def measure(n: int, seed: int) -> dict[str, Any]:
    limits = python_limits(DR256.model_copy(update={"tools": ("python",)}))
    rng = random.Random(seed)
    runners: dict[Isolation, LocalPython] = {"none": LocalPython(isolation="none"), "unshare": LocalPython()}
    results: dict[str, Any] = {}
    for name, code in PROGRAMS.items():
        times: dict[str, list[float]] = {"none": [], "unshare": []}
        cpu: dict[str, list[float]] = {"none": [], "unshare": []}
        for _ in range(n):
            order: list[Isolation] = ["none", "unshare"]
            rng.shuffle(order)
            for iso in order:
                c0 = _children_cpu()
                t0 = time.perf_counter()
                r = runners[iso].run(code, limits)
                times[iso].append(time.perf_counter() - t0)
                cpu[iso].append(_children_cpu() - c0)
                assert r.ok, r.body
        results[name] = {iso: {"median_ms": round(1000 * statistics.median(ts), 1),
                               "p90_ms": round(1000 * _quantile(ts, 0.9), 1),
                               "cpu_median_ms": round(1000 * statistics.median(cpu[iso]), 1)}
                         for iso, ts in times.items()}
        results[name]["overhead_median_ms"] = round(
            results[name]["unshare"]["median_ms"] - results[name]["none"]["median_ms"], 1)
    return {"n": n, "seed": seed, "programs": results}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="calls per program and isolation (default 40)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    res = measure(args.n, args.seed)
    for name, r in res["programs"].items():
        print(f"{name:16s} none {r['none']['median_ms']:7.1f} ms (p90 {r['none']['p90_ms']:7.1f})   "
              f"unshare {r['unshare']['median_ms']:7.1f} ms (p90 {r['unshare']['p90_ms']:7.1f})   "
              f"overhead {r['overhead_median_ms']:+.1f} ms   "
              f"cpu {r['none']['cpu_median_ms']:.0f} / {r['unshare']['cpu_median_ms']:.0f} ms")
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
