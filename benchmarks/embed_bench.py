"""Embedding throughput (texts/s) of ``drsearch.benchmark.generate.embed`` on this machine.

Texts: the sample corpus's documents (data/sample/docs.jsonl), cut to question-sized
(first 25 words) and paragraph-sized (first 150 words, about the 256-token limit)
pieces; the mean token count of each set is printed. Each configuration (route, threads, batch size) is timed
``--repeats`` times, interleaved with the others, and the best pass is reported, as the
machine is shared and its speed drifts.

Usage::

    python benchmarks/embed_bench.py [--texts 128] [--repeats 2] [--threads 1 2] [--batch 1 32] [--fp32]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from drsearch.benchmark.generate.embed import Embedder, SentenceTransformerEmbedder  # noqa: E402


def texts(n: int, words: int) -> list[str]:
    out: list[str] = []
    with open(REPO / "data/sample/docs.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            body = " ".join((doc.get("title", "") + " " + doc.get("text", "")).split()[:words])
            if body.strip():
                out.append(body)
    return [out[i % len(out)] + ("" if i < len(out) else f" ({i})") for i in range(n)]


def best_rate(embedder: Any, items: list[str], repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        embedder.embed(items)
        rates.append(len(items) / (time.perf_counter() - t0))
    return max(rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--fp32", action="store_true", help="also the sentence-transformers fp32 route")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sets = {"question (25 words)": texts(args.texts, 25), "paragraph (150 words)": texts(args.texts, 150)}
    configs: list[tuple[str, int, int, Any]] = []
    for threads in args.threads:
        for batch in args.batch:
            configs.append(("onnx-int8", threads, batch, Embedder(threads=threads, batch_size=batch)))
    if args.fp32:
        import torch  # type: ignore[import-not-found]

        for threads in args.threads:
            torch.set_num_threads(threads)
            configs.append(("st-fp32", threads, 32, SentenceTransformerEmbedder(batch_size=32)))
    for _, _, _, e in configs:  # warm-up: first session runs allocate
        e.embed(sets["question (25 words)"][:8])
    results: list[dict[str, Any]] = []
    tokenizer = configs[0][3].tokenizer
    for name, items in sets.items():
        tokens = sum(len(enc.ids) for enc in tokenizer.encode_batch(items)) / len(items)
        print(f"{name}: {len(items)} texts, {tokens:.0f} tokens on average (256 at most)", flush=True)
        for route, threads, batch, e in configs:
            if route == "st-fp32":
                torch.set_num_threads(threads)
            rate = best_rate(e, items, args.repeats)
            results.append({"batch": batch, "route": route, "set": name, "texts": len(items),
                            "texts_per_s": rate, "threads": threads})
            print(f"{name:<22} {route:<10} threads {threads}  batch {batch:>3}  {rate:8.1f} texts/s",
                  flush=True)
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                text=True).stdout.strip()
        summary = {"commit": commit, "cpus": os.cpu_count(), "load_avg_1m": os.getloadavg()[0],
                   "machine": platform.machine(), "results": results}
        args.json.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
