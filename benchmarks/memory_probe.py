"""Where a serving process's private memory goes: search_bench.py's "private memory" broken down.

search_bench.py reads ``/proc/self/smaps_rollup`` in each of 2 serving processes once both
have answered every query; its target (< 100 MiB) is on ``Anonymous``, the memory the process
alone holds, and it prints ``Private_Clean + Private_Dirty`` beside it, which also counts the
file's clean pages that only this process happens to have mapped (page cache). This
probe does the same (``--procs`` processes of one thread, spawned, each answering every query
of the same classes once, then waiting for the others) and reads ``/proc/self/smaps``
instead, mapping by mapping, so the total comes with its parts:

- ``index file``: the file's own mmap (pages only one process has touched count as private);
- ``heap``: ``[heap]`` (the interpreter's objects, SQLite's page cache, small numpy arrays);
- ``anonymous``: other mappings without a file (numpy's large arrays, the arenas, the
  scratch), also listed one by one, largest first;
- ``libraries``: shared objects (their relocated, written pages are private);
- ``other``: stacks and the rest.

Plus the engine's own numpy arrays by name (their nbytes: what they would cost when every
page is touched). Linux only.

Usage::

    python benchmarks/memory_probe.py INDEX                       # the 300 normal queries
    python benchmarks/memory_probe.py INDEX --docs 121272 --vocabulary large  # + entity, rare
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
from pathlib import Path
from typing import Any

import corpus_gen
import numpy as np

MiB = 1 << 20
TARGET = 100 * MiB
_FIELDS = ("Rss", "Private_Clean", "Private_Dirty", "Anonymous")
GROUPS = ("index file", "heap", "anonymous", "libraries", "other")


def smaps_by_mapping(index: str) -> list[dict[str, Any]]:
    """Every mapping of this process: its group, name, size and the fields above (bytes)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    with open("/proc/self/smaps", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            head = line.split(maxsplit=5)
            if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:  # a mapping's header
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                name = head[5].strip() if len(head) > 5 else ""
                if name == index:
                    group = "index file"
                elif name == "[heap]":
                    group = "heap"
                elif not name:
                    group = "anonymous"
                elif ".so" in name:
                    group = "libraries"
                else:
                    group = "other"
                cur = {"group": group, "name": name, "size": hi - lo, **dict.fromkeys(_FIELDS, 0)}
                out.append(cur)
            elif cur is not None and head[0].rstrip(":") in _FIELDS and len(head) >= 3:
                cur[head[0].rstrip(":")] = int(head[1]) * 1024
    return out


def engine_arrays(engine: Any) -> dict[str, int]:
    """nbytes of the numpy arrays the engine and its scorer hold, by attribute."""
    found: dict[str, int] = {}
    for owner, obj in (("engine", engine), ("scorer", engine.scorer)):
        names = list(getattr(obj, "__dict__", {})) + list(getattr(type(obj), "__slots__", ()))
        for name in names:
            value = getattr(obj, name, None)
            if isinstance(value, np.ndarray):
                found[f"{owner}.{name}"] = int(value.nbytes)
    return found


def resident_bytes(array: Any) -> int:
    """Bytes of ``array``'s memory that are resident (``/proc/self/pagemap``'s present bit,
    readable without privileges), counted by whole pages: what touching it has cost."""
    data = np.asarray(array)
    if data.nbytes == 0:
        return 0
    lo = data.__array_interface__["data"][0]
    page = 4096
    first, last = lo // page, (lo + data.nbytes - 1) // page
    with open("/proc/self/pagemap", "rb") as fh:
        fh.seek(8 * first)
        entries = np.frombuffer(fh.read(8 * (last - first + 1)), dtype="<u8")
    return int(np.count_nonzero(entries >> np.uint64(63))) * page


def engine_buffers(engine: Any) -> dict[str, tuple[int, int]]:
    """(size, resident bytes) of the serving thread's own buffers and the engine's arrays."""
    found: dict[str, Any] = {}
    local = engine._local
    arena = getattr(local, "arena", None)
    if arena is not None:
        found["thread.arena"] = arena._buf
    scratch = getattr(local, "scratch", None)
    if scratch is not None:
        for name in type(scratch).__slots__:
            found[f"thread.scratch.{name}"] = getattr(scratch, name)
    for owner, obj in (("engine", engine), ("scorer", engine.scorer)):
        names = list(getattr(obj, "__dict__", {})) + list(getattr(type(obj), "__slots__", ()))
        for name in names:
            value = getattr(obj, name, None)
            if isinstance(value, np.ndarray):
                found[f"{owner}.{name}"] = value
    return {k: (int(v.nbytes), resident_bytes(v)) for k, v in found.items()}


def _serve(index: str, queries: list[str], barrier: Any, out: Any) -> None:
    from drsearch.index import Engine

    e = Engine.open(index)
    for q in queries:
        e.search(q, 10)
    barrier.wait()  # every process has answered every query: the pages they share are shared
    maps = smaps_by_mapping(str(Path(index).resolve()))
    barrier.wait()
    out.put({"maps": maps, "arrays": engine_arrays(e), "buffers": engine_buffers(e)})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--procs", type=int, default=2, help="serving processes (search_bench: 2)")
    ap.add_argument("--queries", type=int, default=corpus_gen.DEFAULT_QUERIES)
    ap.add_argument("--seed", type=int, default=corpus_gen.DEFAULT_SEED)
    ap.add_argument("--docs", type=int, help="with --vocabulary large or web: the corpus its extra "
                    "query classes come from (web without it: the normal queries only)")
    ap.add_argument("--vocabulary", choices=corpus_gen.VOCABULARIES, default="web")
    ap.add_argument("--entity-queries", type=int, default=100)
    ap.add_argument("--top", type=int, default=8, help="anonymous mappings listed")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not args.index.is_file():
        ap.error(f"{args.index}: no such index file")
    if args.procs < 1:
        ap.error("--procs must be positive")
    _, queries = corpus_gen.ensure_queries(args.queries, args.seed)
    if args.vocabulary == "large" and args.docs is None:
        ap.error("--vocabulary large needs --docs (the corpus its entity queries come from)")
    if args.vocabulary in ("large", "web") and args.docs is not None:
        corpus, cmeta = corpus_gen.ensure_corpus(args.docs, args.seed,
                                                 vocab=corpus_gen.Vocabulary(args.vocabulary))
        ensure = (corpus_gen.ensure_entity_queries if args.vocabulary == "large"
                  else corpus_gen.ensure_web_queries)
        _, extra = ensure(corpus, cmeta, args.entity_queries, args.seed)
        queries = queries + [q for qs in extra.values() for q in qs]
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(args.procs), ctx.Queue()
    ps = [ctx.Process(target=_serve, args=(str(args.index), queries, barrier, out))
          for _ in range(args.procs)]
    for p in ps:
        p.start()
    results = [out.get() for _ in ps]
    for p in ps:
        p.join()
    worst = max(results, key=lambda r: sum(m["Anonymous"] for m in r["maps"]))
    maps = worst["maps"]
    print(f"{args.index} ({args.index.stat().st_size / MiB:,.0f} MiB), {len(queries)} queries answered by "
          f"each of {args.procs} processes; the process with the most anonymous memory:")
    print(f"{'group':<14}{'RSS MiB':>10}{'private MiB':>13}{'dirty MiB':>11}{'anon MiB':>10}{'maps':>6}")
    totals: dict[str, dict[str, int]] = {}
    for g in GROUPS:
        ms = [m for m in maps if m["group"] == g]
        t = {f: sum(m[f] for m in ms) for f in _FIELDS} | {"maps": len(ms)}
        totals[g] = t
        print(f"{g:<14}{t['Rss'] / MiB:>10.1f}{(t['Private_Clean'] + t['Private_Dirty']) / MiB:>13.1f}"
              f"{t['Private_Dirty'] / MiB:>11.1f}{t['Anonymous'] / MiB:>10.1f}{t['maps']:>6}")
    private = sum(m["Private_Clean"] + m["Private_Dirty"] for m in maps)
    own = sum(m["Anonymous"] for m in maps)
    print(f"{'total':<14}{sum(m['Rss'] for m in maps) / MiB:>10.1f}{private / MiB:>13.1f}"
          f"{sum(m['Private_Dirty'] for m in maps) / MiB:>11.1f}{own / MiB:>10.1f}")
    print(f"the process's own memory (anonymous) {own / MiB:.1f} MiB  target < {TARGET / MiB:.0f} MiB  "
          f"{'PASS' if own < TARGET else 'FAIL'}; private with the file's clean pages mapped by "
          f"it alone {private / MiB:.1f} MiB")
    anon = sorted((m for m in maps if m["group"] in ("anonymous", "heap")),
                  key=lambda m: -(m["Private_Clean"] + m["Private_Dirty"]))[:args.top]
    print("largest private anonymous mappings (size MiB / private MiB): " + ", ".join(
        f"{m['size'] / MiB:.1f}/{(m['Private_Clean'] + m['Private_Dirty']) / MiB:.1f}"
        + (" heap" if m["group"] == "heap" else "") for m in anon))
    arrays = worst["arrays"]
    print("engine arrays (MiB): " + ", ".join(f"{k} {v / MiB:.1f}" for k, v in
                                              sorted(arrays.items(), key=lambda kv: -kv[1])))
    print("the serving thread's buffers and the engine's arrays (size / resident MiB; views of "
          "one buffer overlap): " + ", ".join(
              f"{k} {size / MiB:.1f}/{res / MiB:.1f}" for k, (size, res) in
              sorted(worst["buffers"].items(), key=lambda kv: -kv[1][1])))
    if args.json:
        print(json.dumps({"index": str(args.index), "queries": len(queries), "procs": args.procs,
                          "private_bytes": [sum(m["Private_Clean"] + m["Private_Dirty"] for m in r["maps"])
                                            for r in results],
                          "anonymous_bytes": [sum(m["Anonymous"] for m in r["maps"]) for r in results],
                          "groups": totals, "arrays": arrays, "buffers": worst["buffers"]},
                         sort_keys=True))
    return 0 if own < TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
