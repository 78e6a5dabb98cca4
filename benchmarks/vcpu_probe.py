"""How far apart two CPUs are: a cache line's round trip between two pinned threads, sampled
over time.

Two threads of one Python process write shared cache lines on every query (reference counts of
shared objects, the interpreter's and the GIL's state), two processes do not; so the
threads-mode throughput of ``search_bench.py`` depends on what a line costs to move between
the two cores, and on a VM that cost is the host's placement of the vCPUs, which it may change
at any time (docs/BENCHMARKS.md, "Why the threads ratio flips between runs"). This probe
compiles ``vcpu_probe.c`` with the system's C compiler, then takes ``--samples`` measurements
of ``--trips`` round trips between CPUs ``--cpus A,B``, ``--gap`` seconds apart, and prints
each and their spread::

    python benchmarks/vcpu_probe.py [--samples 10] [--gap 2] [--trips 2000000] [--cpus 0,1]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from cprobe import compile_shared

HERE = Path(__file__).resolve().parent
C_SOURCE = HERE / "vcpu_probe.c"


def compile_probe(tmp: Path) -> ctypes.CDLL:
    """The probe as a shared library. SystemExit (one line) without a C compiler or on its error."""
    lib = compile_shared("vcpu_probe", C_SOURCE, ["-O2", "-pthread"], tmp)
    lib.round_trip_ns.restype = ctypes.c_double
    lib.round_trip_ns.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long]
    return lib


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=10, help="measurements (default 10)")
    ap.add_argument("--gap", type=float, default=2.0, help="seconds between them (default 2)")
    ap.add_argument("--trips", type=int, default=2_000_000, help="round trips a measurement")
    ap.add_argument("--cpus", default="0,1", help="the two CPUs, A,B (default 0,1)")
    args = ap.parse_args(argv)
    try:
        a, b = (int(x) for x in args.cpus.split(","))
    except ValueError:
        print(f"vcpu_probe: --cpus {args.cpus!r} is not two CPU numbers A,B", file=sys.stderr)
        return 2
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    if a == b or a not in allowed or b not in allowed:
        print(f"vcpu_probe: --cpus {a},{b}: two different CPUs of this process's {sorted(allowed)} needed",
              file=sys.stderr)
        return 2
    if args.samples < 1 or args.trips < 1 or args.gap < 0:
        print("vcpu_probe: --samples >= 1, --trips >= 1 and --gap >= 0", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        lib = compile_probe(Path(tmp))
        got = []
        for i in range(args.samples):
            if i:
                time.sleep(args.gap)
            ns = lib.round_trip_ns(a, b, args.trips)
            if ns < 0:
                print("vcpu_probe: a probe thread did not start", file=sys.stderr)
                return 1
            got.append(ns)
            print(f"sample {i + 1}: {ns:7.1f} ns a round trip (CPUs {a} and {b})", flush=True)
    low = min(got)
    far = sum(1 for x in got if x > 2 * low)
    print(f"{len(got)} samples: min {low:.1f}, median {statistics.median(got):.1f}, max {max(got):.1f} ns; "
          f"{far} of them over twice the min (the CPUs placed farther apart then)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
