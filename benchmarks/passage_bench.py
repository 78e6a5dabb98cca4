"""Passage benchmark: a Search-R1-shaped passage corpus (wiki-18's shape, 1/10 of it by
default) built, searched and served by drsearch, against tantivy and PISA, in one run.

What one invocation does, on ``--passages N`` passages (default 2,000,000; the web-like
vocabulary of ``corpus_gen.py`` unless ``--vocabulary`` says otherwise; generated once and
cached under ``DRSEARCH_BENCH_CACHE`` or ``--cache``):

- builds ours (``drsearch.index.build``, ``--threads`` threads) and tantivy (as many writer
  threads, 256 MiB heap each) from the same file, interleaved ``--repeat`` times, each in a
  fresh interpreter (``build_bench.py``'s children): wall seconds, CPU seconds and peak RSS
  (ours: its process's plus its tokenizing worker's peak, a bound), medians kept;
- builds PISA over ours' own FTS5 terms (``search_bench.py``'s feed; for latency only);
- ranked top-3 latency (the Search-R1 trainer's ``topk``) on the agent-style queries of
  ``corpus_gen.py``: ours (``Engine.search(q, 3, with_text=False)``), tantivy, PISA MaxScore
  and block-max WAND, every engine on every query in a seeded random order per query and
  round, each query's median over ``--rounds`` kept; p50/p99 and ratios to PISA and tantivy;
- a fresh ``drsearch serve`` process's time from spawn to its first ``POST /retrieve``
  answer (one query, ``topk`` 3) on a warm page cache (the file read through first): the
  median of ``--serve-runs`` starts, polled every 5 ms;
- the 1-minute load averages before and after every phase (this machine is shared: walls
  mean little when the load is above the CPU count; CPU seconds do not depend on it).

Goals (docs/SCALING.md, "Passages at 2M"): build wall <= 1.5x tantivy with the same threads,
build peak RSS <= 1 GB, serve's first answer <= 2 s warm; ranked k=3 latency against PISA is
recorded, not a goal. The exit status is 0 whether goals pass or not (they are printed).

Usage::

    python benchmarks/passage_bench.py                       # 2,000,000 passages (about an hour)
    python benchmarks/passage_bench.py --passages 20000 --repeat 2 --json out.json
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import build_bench
import corpus_gen
import numpy as np
import search_bench as sb

GB = 1_000_000_000
TOPK = 3  # Search-R1's retriever topk
ORDER_SEED = 20261207
POLL_S = 0.005
ENGINES = ("ours", "tantivy", "pisa")


def load() -> float:
    return os.getloadavg()[0]


def build_all(corpus: Path, work: Path, tokenizer: str, threads: int, repeat: int,
              log: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    """Ours and tantivy, interleaved ``repeat`` times; each one's medians (and the load
    average around its builds)."""
    common = {"corpus": str(corpus), "tokenizer": tokenizer}
    configs = {
        "ours": ("build-ours", {**common, "out": str(work / "ours.sqlite3"), "threads": threads}),
        "tantivy": ("build-tantivy", {**common, "dir": str(work / "tantivy"), "threads": threads,
                                      "heap_bytes": build_bench.TANTIVY_HEAP_PER_THREAD * threads}),
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in configs}
    for r in range(repeat):
        for name, (child, cargs) in configs.items():
            before = load()
            log(f"build {name} ({r + 1}/{repeat}), load {before:.1f}")
            res = build_bench.measure(child, cargs)
            res["load"] = [before, load()]
            log(f"build {name}: {res['wall_s']:.1f} s wall, {res['cpu_s']:.1f} s CPU, peak RSS "
                f"{res['peak_rss_bytes'] / 1e6:.0f} MB")  # a run cut short keeps its builds in the log
            runs[name].append(res)
    out: dict[str, dict[str, Any]] = {}
    for name, rs in runs.items():
        out[name] = {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "peak_rss_bytes")}
        out[name].update(bytes=rs[-1]["bytes"], chunks=rs[-1]["chunks"], runs=len(rs),
                         load=[r["load"] for r in rs])
        if name == "ours":
            out[name].update({k: rs[-1][k] for k in ("self_cpu_s", "worker_cpu_s", "worker_peak_rss_bytes")})
    return out


def ranked_latency(engines: Sequence[Any], queries: Sequence[str], warmup: int,
                   rounds: int) -> dict[str, dict[str, float]]:
    """Ranked top-``TOPK`` per engine, interleaved in a seeded random order per query and
    round; p50/p99/mean (ms) over the per-query medians."""
    for q in queries[:warmup]:
        for e in engines:
            e.ranked(q, TOPK)
    times: dict[str, list[list[float]]] = {e.name: [[] for _ in queries] for e in engines}
    clock, rng = time.perf_counter, random.Random(ORDER_SEED)
    for _ in range(rounds):
        for i, q in enumerate(queries):
            for e in rng.sample(list(engines), len(engines)):
                t0 = clock()
                e.ranked(q, TOPK)
                times[e.name][i].append(clock() - t0)
    out = {}
    for name, per in times.items():
        med = np.array([statistics.median(t) for t in per]) * 1e3
        out[name] = {"p50": float(np.percentile(med, 50)), "p99": float(np.percentile(med, 99)),
                     "mean": float(med.mean())}
    return out


def _drsearch() -> str:
    return shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def first_answer(index: Path, query: str, log_path: Path, timeout_s: float = 120.0) -> float:
    """Seconds from spawning ``drsearch serve`` to its first 200 answer to ``POST /retrieve``
    (polled every POLL_S: connection refused until it listens). The server is stopped after."""
    port = _free_port()
    body = json.dumps({"queries": [query], "topk": TOPK, "return_scores": True}).encode()
    t0 = time.perf_counter()
    with log_path.open("wb") as out:
        proc = subprocess.Popen([_drsearch(), "serve", "--database", str(index), "--host", "127.0.0.1",
                                 "--port", str(port), "--log-level", "warning"],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"passage_bench: drsearch serve exited {proc.returncode}: "
                                 f"{log_path.read_text(errors='replace')[-500:]}")
            if time.perf_counter() - t0 > timeout_s:
                raise SystemExit(f"passage_bench: drsearch serve did not answer /retrieve in {timeout_s:g} s")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
                conn.request("POST", "/retrieve", body, {"content-type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
            except OSError:
                time.sleep(POLL_S)
                continue
            elapsed = time.perf_counter() - t0
            if resp.status != 200:
                raise SystemExit(f"passage_bench: /retrieve answered {resp.status}: {data[:300]!r}")
            answer = json.loads(data)
            if not isinstance(answer.get("result"), list) or len(answer["result"]) != 1:
                raise SystemExit(f"passage_bench: /retrieve's answer is not Search-R1's shape: "
                                 f"{data[:300]!r}")
            return elapsed
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def serve_starts(index: Path, queries: Sequence[str], runs: int, work: Path) -> dict[str, Any]:
    sb.read_through(index)  # a warm page cache: the goal's condition
    times = [first_answer(index, queries[i % len(queries)], work / "serve.log") for i in range(runs)]
    return {"median_s": statistics.median(times), "runs_s": times}


def report(res: dict[str, Any]) -> str:
    b, lat, n = res["builds"], res["latency_ms"], res["passages"]
    lines = [f"passages: {n:,} ({res['corpus_bytes'] / 1e6:,.0f} MB, vocabulary {res['vocabulary']}); "
             f"{res['cpus']} CPUs; {res['threads']} build threads; repeat {res['repeat']}; "
             f"load average {res['load']['start']:.1f} (start) -> {res['load']['end']:.1f} (end)",
             f"{'build':<10}{'wall s':>9}{'CPU s':>9}{'peak RSS MB':>13}{'size MB':>10}{'load':>12}"]
    for name, r in b.items():
        loads = "/".join(f"{x[0]:.1f}" for x in r.get("load", [])) or "-"
        lines.append(f"{name:<10}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}{r['peak_rss_bytes'] / 1e6:>13.0f}"
                     f"{r['bytes'] / 1e6:>10.0f}{loads:>12}")
    if "ours" in b and "self_cpu_s" in b["ours"]:
        lines.append(f"ours CPU by side (last run): writing process {b['ours']['self_cpu_s']:.1f} s, "
                     f"tokenizing worker {b['ours']['worker_cpu_s']:.1f} s "
                     f"(worker peak RSS {b['ours']['worker_peak_rss_bytes'] / 1e6:.0f} MB)")
    if res["pisa_build"]:
        p = res["pisa_build"]
        lines.append(f"PISA (latency peer, over ours' terms): {p['seconds']:.1f} s, peak RSS "
                     f"{p['peak_rss_bytes'] / 1e6:.0f} MB, {p['bytes'] / 1e6:.0f} MB")
    lines.append(f"ranked k={TOPK} latency, {res['queries']} queries x {res['rounds']} rounds "
                 f"(load {res['load']['latency'][0]:.1f} -> {res['load']['latency'][1]:.1f}):")
    for name, r in lat.items():
        lines.append(f"  {name:<9} p50 {r['p50']:7.3f} ms  p99 {r['p99']:7.3f} ms  mean {r['mean']:7.3f} ms")
    s = res["serve"]
    lines.append(f"serve to first /retrieve answer, warm page cache: median {s['median_s']:.2f} s of "
                 f"{', '.join(f'{t:.2f}' for t in s['runs_s'])} (load {res['load']['serve'][0]:.1f} -> "
                 f"{res['load']['serve'][1]:.1f})")
    for label, value, target, ok in checks(res):
        verdict = "" if ok is None else ("PASS" if ok else "FAIL")
        lines.append(f"{label:<38}{value:>8.2f}  {target:<7} {verdict}")
    for name, why in res["skipped"].items():
        lines.append(f"skipped {name}: {why}")
    return "\n".join(lines)


def checks(res: dict[str, Any]) -> list[tuple[str, float, str, bool | None]]:
    """(label, value, goal, met: None when only recorded) for every ratio of the run."""
    b, lat = res["builds"], res["latency_ms"]
    out: list[tuple[str, float, str, bool | None]] = []
    wall = b["ours"]["wall_s"] / b["tantivy"]["wall_s"]
    out.append(("build wall ours/tantivy", wall, "<= 1.5", wall <= 1.5))
    out.append(("build CPU ours/tantivy", b["ours"]["cpu_s"] / b["tantivy"]["cpu_s"], "", None))
    out.append(("build peak RSS ours/tantivy", b["ours"]["peak_rss_bytes"] / b["tantivy"]["peak_rss_bytes"],
                "", None))
    rss = b["ours"]["peak_rss_bytes"] / GB
    out.append(("build peak RSS ours GB", rss, "<= 1.0", rss <= 1.0))
    for peer in ("pisa", "pisa_bmw", "tantivy"):
        if peer in lat:
            for p in ("p50", "p99"):
                out.append((f"ranked k={TOPK} {p} ours/{peer}", lat["ours"][p] / lat[peer][p], "", None))
    first = res["serve"]["median_s"]
    out.append(("serve first answer s (median)", first, "<= 2.0", first <= 2.0))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=2_000_000,
                    help="passages (default 2,000,000: 1/10 of wiki-18)")
    ap.add_argument("--seed", type=int, default=corpus_gen.DEFAULT_SEED)
    corpus_gen.add_vocabulary_arg(ap)
    ap.add_argument("--tokenizer", choices=("porter", "unicode61"), default="porter")
    ap.add_argument("--threads", type=int, default=2, help="build threads, ours and tantivy (1 or 2)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved builds of each (median kept)")
    ap.add_argument("--queries", type=int, default=corpus_gen.DEFAULT_QUERIES, help="agent-style queries")
    ap.add_argument("--warmup", type=int, default=20, help="untimed queries per engine first")
    ap.add_argument("--rounds", type=int, default=3, help="timed passes over the queries")
    ap.add_argument("--serve-runs", type=int, default=5, help="fresh serve processes timed (median)")
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help="comma list: ours,tantivy required; pisa skipped with a note when absent")
    ap.add_argument("--cache", type=Path, default=corpus_gen.CACHE,
                    help="where the corpus and indexes are kept (default: DRSEARCH_BENCH_CACHE or "
                         "benchmarks/.cache)")
    ap.add_argument("--keep", action="store_true", help="keep the indexes (default: removed at the end)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    for name in ("passages", "repeat", "queries", "rounds", "serve_runs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be positive")
    if args.warmup < 0 or not 1 <= args.threads <= 2:
        ap.error("--warmup must be >= 0, --threads 1 or 2")
    engines = set(args.engines.split(","))
    if not {"ours", "tantivy"} <= engines or not engines <= set(ENGINES):
        ap.error("--engines: ours and tantivy are required; pisa optional")

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    skipped: dict[str, str] = {}
    if "pisa" in engines:
        why = sb.load_pisathon()[1]
        if why:
            log(f"pisa skipped: {why}")
            engines.discard("pisa")
            skipped["pisa"] = why
    loads: dict[str, Any] = {"start": load()}
    vocab = corpus_gen.Vocabulary(args.vocabulary)
    log(f"passage corpus: {args.passages:,} passages (generated once, then cached in {args.cache})")
    corpus, cmeta = corpus_gen.ensure_passages(args.passages, args.seed, cache=args.cache, vocab=vocab)
    _, queries = corpus_gen.ensure_queries(args.queries, args.seed, cache=args.cache)
    work = args.cache / f"passage-bench-{corpus.stem}-{args.tokenizer}"
    work.mkdir(parents=True, exist_ok=True)
    pisa_build: dict[str, Any] | None = None
    try:
        builds = build_all(corpus, work, args.tokenizer, args.threads, args.repeat, log)
        ours_path = work / "ours.sqlite3"
        if not builds["ours"]["chunks"] == builds["tantivy"]["chunks"] == args.passages:
            raise SystemExit(f"passage_bench: ours indexed {builds['ours']['chunks']} chunks, tantivy "
                             f"{builds['tantivy']['chunks']}, of {args.passages} passages")
        if "pisa" in engines:
            log(f"build PISA (latency peer), load {load():.1f}")
            pisa_build = sb.run_child("build-pisa", {"corpus": str(corpus), "dir": str(work / "pisa"),
                                                     "index": str(ours_path), "threads": args.threads})
        log(f"ranked k={TOPK} latency, load {load():.1f}")
        loads["latency"] = [load()]
        meta = sb.Meta(ours_path)
        eng: list[Any] = [sb.Ours(ours_path), sb.Tantivy(work / "tantivy", args.tokenizer, meta)]
        if "pisa" in engines:
            codes = sb.pisa_term_codes(work / "pisa")
            eng += [sb.Pisa(work / "pisa", ours_path, meta, alg, codes)
                    for alg in ("maxscore", "block_max_wand")]
        lat = ranked_latency(eng, queries, args.warmup, args.rounds)
        log("ranked k=3 p50 / p99 ms: " + ", ".join(f"{k} {v['p50']:.3f} / {v['p99']:.3f}"
                                                     for k, v in lat.items()))
        loads["latency"].append(load())
        del eng, meta
        log(f"serve to first /retrieve answer ({args.serve_runs} starts), load {load():.1f}")
        loads["serve"] = [load()]
        serve = serve_starts(ours_path, queries, args.serve_runs, work)
        loads["serve"].append(load())
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    loads["end"] = load()
    res = {"passages": args.passages, "corpus_bytes": corpus.stat().st_size, "vocabulary": vocab.name,
           "seed": args.seed, "tokenizer": args.tokenizer, "threads": args.threads, "repeat": args.repeat,
           "queries": len(queries), "rounds": args.rounds, "cpus": os.cpu_count(), "builds": builds,
           "pisa_build": pisa_build,
           "latency_ms": lat, "serve": serve, "load": loads, "skipped": skipped,
           "corpus_meta": cmeta, "source": sb._source_state(),
           "command": " ".join([Path(sys.executable).name, *sys.argv])}
    res["checks"] = [{"label": c[0], "value": c[1], "goal": c[2], "met": c[3]} for c in checks(res)]
    print(report(res), flush=True)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
