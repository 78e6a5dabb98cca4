"""The OpenBioRQ-style pipeline's pace against a slow OpenAI-compatible endpoint, per stage, at
several ``--concurrency`` levels.

The endpoint is generator_pace.py's: every call takes ``--delay`` seconds (1.5 s) and
``--rate-limited`` of them (5 %, seeded; never the start-up probe) are refused with HTTP 429 and
``Retry-After: 1`` first. The replies are the tests' rule-based writer and judge
(tests/benchmark/generate/openbiorq/rules.py); the openness evidence comes from the tests'
loopback server in the three public APIs' shapes (evidence_servers.py). The input is
data/openbiorq/sources.jsonl copied ``--copies`` times under fresh identifiers (same text: dedup
collapses the copies' questions, so the stages after it see the fixture's items).

For each level a fresh directory is generated with ``drsearch generate openbiorq export`` in
this process (cache mode record, ``--api-min-interval 0``) and the script prints, per stage that
calls a model, the items in and out, the model calls, the wall time and the items per hour,
then the whole run's questions per hour (exported items over the run's wall time) and the
429s. It also checks that every level wrote the same bytes (timings.json and the cache aside).

    python benchmarks/openbiorq_pace.py --concurrency 1 16 [--copies 4] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import io
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO), str(REPO / "benchmarks")]

from generator_pace import SlowEndpoint, serve  # noqa: E402
from tests.benchmark.generate.openbiorq.evidence_servers import api_shapes  # noqa: E402
from tests.benchmark.generate.openbiorq.rules import RULES  # noqa: E402

from drsearch.dev.chat import RuleResponder  # noqa: E402
from drsearch.tools.cli import main as drsearch  # noqa: E402

MODEL_STAGES = ("extract", "refine", "audit", "rubric", "openness")
SOURCES = REPO / "data/openbiorq/sources.jsonl"


def copy_id(source_id: str, k: int) -> str:
    """The ``k``-th copy's identifier, of the same kind and shape (k = 0: the original)."""
    if k == 0:
        return source_id
    if m := re.fullmatch(r"PMID:(\d+)", source_id):
        return f"PMID:{int(m.group(1)) + 100 * k}"
    if m := re.fullmatch(r"NCT(\d{8})", source_id):
        return f"NCT{int(m.group(1)) + 100 * k:08d}"
    if m := re.fullmatch(r"arXiv:(\d{4})\.(\d{5})", source_id):
        return f"arXiv:{m.group(1)}.{int(m.group(2)) + 100 * k:05d}"
    return f"{source_id}-copy{k}"


def write_sources(path: Path, copies: int) -> int:
    rows = [json.loads(line) for line in SOURCES.read_text().splitlines() if line.strip()]
    out = [{**r, "source_id": copy_id(r["source_id"], k)} for k in range(copies) for r in rows]
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return len(out)


def one_level(sources: Path, out: Path, n: int, endpoint: SlowEndpoint, llm: str,
              apis: str) -> dict[str, Any]:
    endpoint.reset()
    buf, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = drsearch(["generate", "openbiorq", "export", str(out), "--sources", str(sources),
                       "--base-url", llm, "--europepmc-url", f"{apis}/europepmc",
                       "--ctgov-url", f"{apis}/ctgov",
                       "--s2-url", f"{apis}/s2", "--api-min-interval", "0", "--concurrency", str(n),
                       "--quiet", "--json"], buf)
    wall = time.monotonic() - t0
    if rc != 0:
        raise SystemExit(f"--concurrency {n}: exit {rc}: {err.getvalue().strip()}")
    summary = json.loads(buf.getvalue())
    stages = {}
    for name in MODEL_STAGES:
        t, c = summary["timings"][name], summary["counts"][name]
        stages[name] = {"in": c["in"], "out": c["out"], "calls": t["model"]["calls"],
                        "wall_s": round(t["wall_s"], 1),
                        "items_per_hour": round(c["in"] * 3600 / t["wall_s"], 1) if t["wall_s"] else None}
    questions = summary["counts"]["export"]["out"]
    return {"concurrency": n, "stages": stages, "questions": questions,
            "model_calls": sum(t["model"]["calls"] for t in summary["timings"].values()),
            "http_requests": endpoint.calls, "http_429": endpoint.refused, "peak_in_flight": endpoint.peak,
            "run_wall_s": round(wall, 1), "questions_per_hour": round(questions * 3600 / wall, 1)}


def same_bytes(a: Path, b: Path) -> bool:
    """Every output file of two runs byte for byte (the clock file and the cache aside)."""
    volatile = ("timings.json", "cache.sqlite3")
    names = sorted(p.name for p in a.iterdir() if p.is_file() and p.name not in volatile)
    match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    return not mismatch and not errors and len(match) == len(names)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", type=int, nargs="*", default=[1, 16])
    ap.add_argument("--copies", type=int, default=4, help="copies of the 10 fixture sources (default 4)")
    ap.add_argument("--delay", type=float, default=1.5, help="seconds per call (default 1.5)")
    ap.add_argument("--rate-limited", type=float, default=0.05, help="share of calls refused with 429")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    endpoint = SlowEndpoint(args.delay, args.rate_limited, seed=20260811)
    endpoint.inner = RuleResponder(RULES)
    results: dict[str, Any] = {"copies": args.copies, "delay_s": args.delay,
                               "rate_limited": args.rate_limited, "levels": []}
    with tempfile.TemporaryDirectory() as tmp, api_shapes() as (apis, _log), serve(endpoint) as llm:
        sources = Path(tmp) / "sources.jsonl"
        results["sources"] = write_sources(sources, args.copies)
        outs = []
        for n in args.concurrency:
            out = Path(tmp) / f"obrq{n}"
            row = one_level(sources, out, n, endpoint, llm, apis)
            outs.append(out)
            results["levels"].append(row)
            print(f"--concurrency {n}: {row['questions']} questions in {row['run_wall_s']} s = "
                  f"{row['questions_per_hour']} questions/hour; {row['model_calls']} model calls, "
                  f"{row['http_429']} answered 429, peak {row['peak_in_flight']} in flight")
            for name, s in row["stages"].items():
                print(f"    {name:>9}: {s['in']:>3} in, {s['out']:>3} out, {s['calls']:>3} calls, "
                      f"{s['wall_s']:>6} s, {s['items_per_hour']} items/hour")
        results["same_bytes"] = all(same_bytes(outs[0], o) for o in outs[1:])
        print(f"outputs byte-identical across levels: {results['same_bytes']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return 0 if results["same_bytes"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
