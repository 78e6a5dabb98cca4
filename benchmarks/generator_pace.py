"""DrBencher's throughput against a slow OpenAI-compatible endpoint, at several ``--concurrency``.

The endpoint answers like a hosted model under load: every call takes ``--delay`` seconds
(1.5 s), and ``--rate-limited`` of them (5 %, drawn from a seeded generator; never the start-up
probe) are refused with HTTP 429 and ``Retry-After: 1`` before that wait, so the client backs
off and retries. The
replies are the tests' rule-based generator model (tests/benchmark/generate/drbencher/
responder.py), so every level produces the same questions. The knowledge graph is the shipped
fixture behind a real ``drsearch kg serve``.

For each concurrency a fresh output directory is generated (``drsearch generate drbencher``
in this process, cache mode record) and the script prints the candidates that reached the
model stages, the questions exported, the model calls, the 429s, the wall time of the model
stages and of the whole run, and questions and candidates per hour; ``--json`` writes them.

    python benchmarks/generator_pace.py --concurrency 1 8 32 [--templates pendulum_drift ...]

Optionally ``--dedup N`` also runs the streamed near-duplicate walk on N random 384-d items in
a child process and reports its peak resident memory (``ru_maxrss``) and time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO), str(REPO / "scripts")]

from tests.benchmark.generate.drbencher.kgserver import DOCS, kg_serve  # noqa: E402

from drsearch.dev.chat import RuleResponder  # noqa: E402
from drsearch.dev.drbencher import RULES  # noqa: E402
from drsearch.tools.cli import main as drsearch  # noqa: E402

MODEL_STAGES = ("clues", "compose", "validate", "v1", "v2")


class SlowEndpoint:
    """The rule responder behind a delay and seeded 429s (with ``Retry-After: 1``)."""

    def __init__(self, delay_s: float, rate_limited: float, seed: int) -> None:
        self.inner = RuleResponder(RULES)
        self.delay_s = delay_s
        self.rate_limited = rate_limited
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.calls = self.refused = self.in_flight = self.peak = 0

    def reset(self) -> None:
        with self.lock:
            self.calls = self.refused = self.peak = 0

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self.lock:
            self.calls += 1
            # the start-up probe (one try, max_tokens 1) is never refused: a refused probe stops
            # the run before it starts (exit 2), which is not what is measured here
            refuse = body.get("max_tokens") != 1 and self.rng.random() < self.rate_limited
            self.refused += refuse
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            if refuse:
                return 429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"retry-after": "1"}
            time.sleep(self.delay_s)
            status, answer = self.inner.respond(body)
            return status, answer, {}
        finally:
            with self.lock:
                self.in_flight -= 1


@contextlib.contextmanager
def serve(endpoint: SlowEndpoint) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # no model list: the client's probe then makes one small call
            self._send(404, {"error": {"message": "no such path", "type": "not_found"}}, {})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            self._send(*endpoint.answer(body))

        def _send(self, status: int, answer: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def write_config(tmp: Path, kg: str, llm: str, templates: list[str] | None) -> Path:
    config = json.loads((DOCS.parent / "gen.json").read_text())
    config["kg"]["endpoint"] = kg
    config["articles"] = str(DOCS)
    config["generator"]["base_url"] = llm
    if templates:
        config["templates"] = templates
    path = tmp / "gen.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def one_level(config: Path, out: Path, n: int, endpoint: SlowEndpoint) -> dict[str, Any]:
    endpoint.reset()
    buf, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stderr(err):
        rc = drsearch(["generate", "drbencher", "--config", str(config), "--out", str(out),
                       "--concurrency", str(n), "--quiet"], buf)
    wall = time.monotonic() - t0
    if rc != 0:
        raise SystemExit(f"--concurrency {n}: exit {rc}: {err.getvalue().strip()}")
    summary = json.loads(buf.getvalue())
    timings = summary["timings"]
    model_wall = sum(t["wall_s"] for s, t in timings.items() if s in MODEL_STAGES)
    questions = summary["counts"]["export"]["out"]
    candidates = summary["counts"]["clues"]["in"]
    return {"concurrency": n, "candidates": candidates, "questions": questions,
            "model_calls": sum(t["model"]["calls"] for t in timings.values()),
            "tokens": sum(t["model"]["total_tokens"] for t in timings.values()),
            "http_requests": endpoint.calls, "http_429": endpoint.refused, "peak_in_flight": endpoint.peak,
            "model_stages_wall_s": round(model_wall, 1), "run_wall_s": round(wall, 1),
            "questions_per_hour": round(questions * 3600 / wall, 1),
            "candidates_per_hour": round(candidates * 3600 / wall, 1)}


DEDUP_CHILD = """
import resource, sys, time
import numpy as np
sys.path.insert(0, sys.argv[2])
from drsearch.benchmark.generate.dedup import dedup
n = int(sys.argv[1])
rng = np.random.default_rng(0)
v = rng.normal(size=(n, 384)).astype(np.float32)
v[1::10] = v[0::10][: len(v[1::10])] + 0.05 * rng.normal(size=(len(v[1::10]), 384)).astype(np.float32)
t0 = time.monotonic()
r = dedup(list(range(n)), v)
print(len(r.kept), len(r.duplicates), round(time.monotonic() - t0, 1),
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def dedup_memory(n: int) -> dict[str, Any]:
    """The streamed dedup of ``n`` random 384-d float32 items (10 % near copies) in a child
    process: kept, duplicates, seconds, peak resident set (MiB)."""
    p = subprocess.run([sys.executable, "-c", DEDUP_CHILD, str(n), str(REPO / "src")], capture_output=True,
                       text=True, check=True)
    kept, dups, seconds, rss_kib = p.stdout.split()
    return {"items": n, "kept": int(kept), "duplicates": int(dups), "seconds": float(seconds),
            "peak_rss_mib": round(int(rss_kib) / 1024, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", type=int, nargs="*", default=[1, 8, 32])
    ap.add_argument("--delay", type=float, default=1.5, help="seconds per call (default 1.5)")
    ap.add_argument("--rate-limited", type=float, default=0.05, help="share of calls refused with 429")
    ap.add_argument("--templates", nargs="*", help="a subset of the fixture config's templates")
    ap.add_argument("--dedup", type=int, default=0, metavar="N", help="also measure dedup of N items")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    results: dict[str, Any] = {"delay_s": args.delay, "rate_limited": args.rate_limited,
                               "templates": args.templates, "levels": []}
    endpoint = SlowEndpoint(args.delay, args.rate_limited, seed=20260811)
    with tempfile.TemporaryDirectory() as tmp, kg_serve() as kg, serve(endpoint) as llm:
        config = write_config(Path(tmp), kg, llm, args.templates)
        for n in args.concurrency:
            row = one_level(config, Path(tmp) / f"gen{n}", n, endpoint)
            results["levels"].append(row)
            print(json.dumps(row), flush=True)
    if args.dedup:
        results["dedup"] = dedup_memory(args.dedup)
        print(json.dumps(results["dedup"]), flush=True)
    results["self_maxrss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
